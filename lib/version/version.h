#pragma once

namespace pltrun {

// "0.1.0 (git 1a2b3c4d5e6f)": project()'s version and the commit the build came from, or
// "0.1.0" alone when the source was not a git checkout (lib/version/CMakeLists.txt).
const char* buildVersion();

}  // namespace pltrun
