// One shell-word module, both ways: words quoted for a remote shell, and a template split
// as a shell splits it; each reads back what the other writes.

#include "launcher/plan/shell_words.h"

#include <catch2/catch.hpp>

#include "pltrun/error.h"

using namespace pltrun;

TEST_CASE("shell quoting survives any byte the remote shell could misread", "[shell_words]") {
  CHECK(shellQuote("plain-word_1.2/x:y=z") == "plain-word_1.2/x:y=z");
  CHECK(shellQuote("") == "''");
  CHECK(shellQuote("two words") == "'two words'");
  CHECK(shellQuote("it's") == "'it'\\''s'");
  CHECK(shellQuote("$HOME;rm -rf /") == "'$HOME;rm -rf /'");
}

TEST_CASE("shell words: a template is split as a POSIX shell splits a simple command", "[shell_words]") {
  using Words = std::vector<std::string>;
  CHECK(splitShellWords("  a  b\tc ", "t") == Words{"a", "b", "c"});
  CHECK(splitShellWords("kubectl exec -c 'my container' x", "t") ==
        Words{"kubectl", "exec", "-c", "my container", "x"});
  CHECK(splitShellWords(R"(a"b c"d 'e\f' "g\"h" i\ j)", "t") == Words{"ab cd", R"(e\f)", "g\"h", "i j"});
  CHECK(splitShellWords("'' \"\"", "t") == Words{"", ""});
  CHECK_THROWS_WITH(splitShellWords("a \"b", "--remote-command"), Catch::Contains("\" quote is not closed"));
  CHECK_THROWS_WITH(splitShellWords("a\\", "t"), Catch::Contains("lone backslash"));
}

TEST_CASE("a quoted command line splits back into the same words", "[shell_words]") {
  const std::vector<std::string> words = {"plain", "", "two words", "it's", R"(a"b\c$d`e)", "\t\n", "'", "--x=1,2"};
  CHECK(splitShellWords(shellCommandLine(words), "t") == words);
  CHECK(shellCommandLine({"sh", "-c", "exec pltrun 'a b'"}) == "sh -c 'exec pltrun '\\''a b'\\'''");
}
