#pragma once
// A bound on how deep a TOML text's keys can nest, checked before the parser sees it.
// toml++ caps nested arrays and inline tables (256), but not a dotted key or a [table.header]:
// [a.a. ... .a] with 32000 levels (64 KiB) builds 32000 nested tables, whose recursive
// destruction overflows the stack. Every level of a key is one '.' outside strings and
// comments, so counting those bounds the depth; a site file has a handful (floats, times).

#include <cstddef>
#include <optional>
#include <string_view>

namespace pltrun {

/// The offset of the first '.' outside strings and comments past `limit` of them in `text`,
/// none when there are at most `limit`. Strings are skipped as TOML 1.0 writes them (basic,
/// literal, multi-line; escapes in basic ones), a single-line one ending at its line's end.
std::optional<size_t> dotPastLimit(std::string_view text, size_t limit);

}  // namespace pltrun
