// TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE read as torchrun reads it: Python's
// string.Template.safe_substitute with role_name, rank and local_rank.

#include "launcher/plan/line_prefix_template.h"

#include <catch2/catch.hpp>

using pltrun::expandLinePrefixTemplate;

TEST_CASE("line prefix template: torch's placeholders, braced or not, and $$", "[line_prefix]") {
  CHECK(expandLinePrefixTemplate("[${role_name}${local_rank}]:", "trainer", 5, 1) == "[trainer1]:");
  CHECK(expandLinePrefixTemplate("[${rank}]:", "default", 5, 1) == "[5]:");
  CHECK(expandLinePrefixTemplate("$rank-$local_rank ", "default", 5, 1) == "5-1 ");
  CHECK(expandLinePrefixTemplate("$$${rank}", "default", 5, 1) == "$5");
}

TEST_CASE("line prefix template: what is not a placeholder it knows is left as written", "[line_prefix]") {
  // safe_substitute: unknown names, an unclosed brace, a lone or trailing $ stay.
  CHECK(expandLinePrefixTemplate("${host}:${rank}", "r", 2, 0) == "${host}:2");
  CHECK(expandLinePrefixTemplate("${rank", "r", 2, 0) == "${rank");
  CHECK(expandLinePrefixTemplate("cost $ 5 $", "r", 2, 0) == "cost $ 5 $");
  CHECK(expandLinePrefixTemplate("$ranks", "r", 2, 0) == "$ranks");  // the identifier is "ranks"
}
