#pragma once
// zygote.py's text, compiled in (generated from it at configure time, see CMakeLists.txt):
// pltrun sends it to the zygote's interpreter, so nothing of pltrun's needs to be on disk
// where that interpreter runs (a container, a chroot).

namespace pltrun {

extern const char* const kZygoteSource;

}  // namespace pltrun
