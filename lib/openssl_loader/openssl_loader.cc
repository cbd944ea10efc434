// Loads the system's libcrypto and libssl on the first call of one of their functions
// (openssl_trampolines.S) and points every trampoline of that library at the real
// function. The shared libraries stay the system's, so Debian's security updates of
// OpenSSL reach pltrun as before; only when they are loaded changes.

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

extern "C" {
#define PLTRUN_OPENSSL_FUNCTION(library, name) extern void* pltrun_openssl_slot_##name;
#include "openssl_functions.def"
#undef PLTRUN_OPENSSL_FUNCTION
void* pltrun_openssl_resolve(void** slot);
}

namespace {

enum class Library { Crypto, Ssl };

struct Function {
  Library library;
  const char* name;
  void** slot;
};

const Function kFunctions[] = {
#define PLTRUN_OPENSSL_FUNCTION(library, name) {Library::library, #name, &pltrun_openssl_slot_##name},
#include "openssl_functions.def"
#undef PLTRUN_OPENSSL_FUNCTION
};

// The sonames of the OpenSSL pltrun was compiled against (CMake passes them), never the
// unversioned names, which only the -dev package installs.
const char* sonameOf(Library library) {
  return library == Library::Crypto ? PLTRUN_LIBCRYPTO_SONAME : PLTRUN_LIBSSL_SONAME;
}

// Without the library the call cannot go on, and no caller could handle a failure it never
// expected from a linked function: say what is missing, as ld.so would have at start-up.
[[noreturn]] void cannotLoad(const char* what) {
  std::fprintf(stderr, "pltrun: cannot load OpenSSL, which the shared secret and TLS need: %s\n", what);
  std::fflush(stderr);
  _exit(127);
}

void loadAll(Library library) {
  void* handle = dlopen(sonameOf(library), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) cannotLoad(dlerror());
  for (const Function& function : kFunctions) {
    if (function.library != library) continue;
    void* address = dlsym(handle, function.name);
    if (address == nullptr) cannotLoad(dlerror());
    __atomic_store_n(function.slot, address, __ATOMIC_RELEASE);  // other threads may jump through it now
  }
}

}  // namespace

// Called by a trampoline's lazy entry, on whatever thread first calls a function of a
// library not loaded yet; two threads at once load it once.
void* pltrun_openssl_resolve(void** slot) {
  static std::mutex loading;
  static bool loaded[2] = {false, false};
  const std::lock_guard<std::mutex> lock(loading);
  for (const Function& function : kFunctions) {
    if (function.slot != slot) continue;
    const auto index = static_cast<int>(function.library);
    if (!loaded[index]) loadAll(function.library);
    loaded[index] = true;
    return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  }
  cannotLoad("an OpenSSL function pltrun does not know");  // a slot not in the table: never
}
