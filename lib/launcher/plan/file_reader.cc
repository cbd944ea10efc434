#include "launcher/plan/file_reader.h"

namespace pltrun {

std::string othersFileRefusal(const std::string& what, const std::string& path, const FileReadError& error) {
  return "refused " + what + " " + shownPath(path) + ": it " + error.what() +
         "; pltrun reads only files that you or root own and no one else can write (as ssh reads keys): "
         "remove it, or chown and chmod go-w it if it is yours to trust";
}

std::string shownPath(const std::string& path) { return path.find('/') == std::string::npos ? "./" + path : path; }

}  // namespace pltrun
