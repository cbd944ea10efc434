# The libraries of the Python wheel's build (-DPLTRUN_WHEEL=ON; scripts/package/wheel.sh),
# in place of the system's shared ones that the Debian build links. A wheel runs on any
# glibc distribution new enough for its manylinux tag, where none of spdlog, fmt, toml++ or
# OpenSSL 3 may be installed: they are compiled in.
#   - spdlog with fmt, and toml++: header-only (their headers under PLTRUN_WHEEL_DEPS);
#   - OpenSSL: the static libcrypto.a and libssl.a of PLTRUN_WHEEL_DEPS (bookworm's 3.0),
#     so the wheel takes OpenSSL's fixes only with a new wheel (README, "Install");
#   - libstdc++ and libgcc: linked statically into the two programs (add_link_options
#     below reaches executables only; libpltrun.so keeps the system's libstdc++.so.6, which
#     every program that can link it already loads: one C++ runtime for the std::string
#     and exceptions its API passes).
# Boost (headers only), CLI11 and nlohmann/json are found as in the Debian build, under
# PLTRUN_WHEEL_DEPS through CMAKE_PREFIX_PATH.
set(PLTRUN_WHEEL_DEPS "" CACHE PATH "Prefix holding the wheel's libraries (include/, lib/<multiarch>/)")
if(NOT IS_DIRECTORY "${PLTRUN_WHEEL_DEPS}/include")
  message(FATAL_ERROR "PLTRUN_WHEEL=ON needs -DPLTRUN_WHEEL_DEPS=PREFIX with include/ and lib/ "
                      "(scripts/package/wheel-chroot.sh makes one); '${PLTRUN_WHEEL_DEPS}' has no include/")
endif()
set(pltrun_wheel_libdir ${PLTRUN_WHEEL_DEPS}/lib/${CMAKE_LIBRARY_ARCHITECTURE})

add_library(spdlog::spdlog INTERFACE IMPORTED)
set_target_properties(spdlog::spdlog PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${PLTRUN_WHEEL_DEPS}/include"
  INTERFACE_COMPILE_DEFINITIONS "SPDLOG_HEADER_ONLY;SPDLOG_FMT_EXTERNAL;FMT_HEADER_ONLY=1"
  INTERFACE_LINK_LIBRARIES Threads::Threads)

add_library(tomlplusplus::tomlplusplus INTERFACE IMPORTED)
set_target_properties(tomlplusplus::tomlplusplus PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${PLTRUN_WHEEL_DEPS}/include"
  INTERFACE_COMPILE_DEFINITIONS "TOML_HEADER_ONLY=1")

# OpenSSL's multiarch headers (opensslconf.h, configuration.h) sit in include/<multiarch>.
set(pltrun_openssl_includes "${PLTRUN_WHEEL_DEPS}/include;${PLTRUN_WHEEL_DEPS}/include/${CMAKE_LIBRARY_ARCHITECTURE}")
add_library(OpenSSL::Crypto STATIC IMPORTED)
set_target_properties(OpenSSL::Crypto PROPERTIES
  IMPORTED_LOCATION "${pltrun_wheel_libdir}/libcrypto.a"
  INTERFACE_INCLUDE_DIRECTORIES "${pltrun_openssl_includes}"
  INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
add_library(OpenSSL::SSL STATIC IMPORTED)
set_target_properties(OpenSSL::SSL PROPERTIES
  IMPORTED_LOCATION "${pltrun_wheel_libdir}/libssl.a"
  INTERFACE_INCLUDE_DIRECTORIES "${pltrun_openssl_includes}"
  INTERFACE_LINK_LIBRARIES OpenSSL::Crypto)

add_link_options($<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-static-libstdc++>
                 $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-static-libgcc>)

# pthread_cond_clockwait for glibc before 2.30 (glibc_before_2_30.c says why), compiled
# into each ELF file of the wheel by pltrun_wheel_compat() (called at the end of the
# top-level CMakeLists.txt, once the targets exist).
function(pltrun_wheel_compat)
  foreach(target ${ARGN})
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/apps/packaging/glibc_before_2_30.c)
    target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})  # dlvsym
  endforeach()
endfunction()
