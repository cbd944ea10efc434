// toml++'s compiled part (libtomlplusplus.so: the parser and the node types, built from
// the same header with TOML_IMPLEMENTATION) built into pltrun's programs, for /etc/pltrun.toml.

#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
