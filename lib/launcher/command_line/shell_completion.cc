#include "launcher/command_line/shell_completion.h"

#include "launcher/plan/text_parsing.h"

namespace pltrun {

std::string shellCompletionScript(const std::string& shell, const std::vector<std::string>& longOptions) {
  const std::string words = joinText(longOptions, " ");
  // bash: options while the word starts with a dash, file names otherwise (PROGRAM, its args).
  const std::string bash =
      "_pltrun() {\n"
      "  local word=\"${COMP_WORDS[COMP_CWORD]}\"\n"
      "  if [[ \"$word\" == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"" +
      words +
      "\" -- \"$word\"))\n"
      "  else\n"
      "    COMPREPLY=($(compgen -f -- \"$word\"))\n"
      "  fi\n"
      "}\n"
      "complete -o filenames -F _pltrun pltrun\n";
  if (shell == "bash") return bash;
  if (shell == "zsh") return "#compdef pltrun\nautoload -U +X bashcompinit && bashcompinit\n" + bash;
  if (shell == "tcsh") {
    // tcsh completes the rest of a word after its "--": the names without their dashes.
    std::vector<std::string> names;
    for (const std::string& option : longOptions) names.push_back(option.substr(option.rfind("--", 0) == 0 ? 2 : 0));
    return "complete pltrun 'c/--/(" + joinText(names, " ") + ")/' 'p/*/f/'\n";
  }
  throwInvalidFlag("--print-completion", shell, "expected bash, zsh or tcsh, as torchrun");
}

}  // namespace pltrun
