// LinePrefixer: whole lines only, one prefix per line or progress-bar segment, however the
// bytes are split into chunks.

#include "launcher/output/line_prefixer.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

using pltrun::LinePrefixer;

namespace {

const std::string kPrefix = "[rank 3] ";

// Feeds `text` in pieces of `chunkSize` bytes, then finishes.
std::string feedInChunks(const std::string& prefix, const std::string& text, size_t chunkSize) {
  LinePrefixer prefixer(prefix);
  std::string out;
  for (size_t start = 0; start < text.size(); start += chunkSize) {
    prefixer.feed(std::string_view(text).substr(start, chunkSize), out);
  }
  prefixer.finish(out);
  return out;
}

std::string feedAll(const std::string& prefix, const std::string& text) {
  return feedInChunks(prefix, text, text.empty() ? 1 : text.size());
}

// Deterministic text of newlines, carriage returns, "\r\n" pairs and ordinary bytes.
std::string randomText(size_t length, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> pick(0, 99);
  std::string text;
  while (text.size() < length) {
    int roll = pick(generator);
    if (roll < 8) {
      text += '\n';
    } else if (roll < 12) {
      text += '\r';
    } else if (roll < 14) {
      text += "\r\n";
    } else {
      text += static_cast<char>('a' + roll % 26);
    }
  }
  return text;
}

}  // namespace

TEST_CASE("every complete line gets the prefix", "[line_prefixer]") {
  LinePrefixer prefixer(kPrefix);
  std::string out;
  prefixer.feed("first\nsecond\n", out);
  CHECK(out == "[rank 3] first\n[rank 3] second\n");
  SECTION("empty lines are lines too") {
    out.clear();
    prefixer.feed("\n\n", out);
    CHECK(out == "[rank 3] \n[rank 3] \n");
  }
}

TEST_CASE("a line split across many feed() calls comes out whole, once", "[line_prefixer]") {
  LinePrefixer prefixer(kPrefix);
  std::string out;
  prefixer.feed("hel", out);
  CHECK(out.empty());
  prefixer.feed("lo w", out);
  CHECK(out.empty());
  prefixer.feed("", out);
  CHECK(out.empty());
  prefixer.feed("orld\nnext", out);
  CHECK(out == "[rank 3] hello world\n");
  prefixer.feed(" line\n", out);
  CHECK(out == "[rank 3] hello world\n[rank 3] next line\n");
}

TEST_CASE("an unfinished line is held until finish(), which ends it", "[line_prefixer]") {
  LinePrefixer prefixer(kPrefix);
  std::string out;
  prefixer.feed("done\nno newline yet", out);
  CHECK(out == "[rank 3] done\n");
  prefixer.finish(out);
  CHECK(out == "[rank 3] done\n[rank 3] no newline yet\n");
  SECTION("finish() writes the line only once") {
    prefixer.finish(out);
    CHECK(out == "[rank 3] done\n[rank 3] no newline yet\n");
  }
  SECTION("finish() after complete lines or nothing writes nothing") {
    LinePrefixer other(kPrefix);
    std::string nothing;
    other.finish(nothing);
    CHECK(nothing.empty());
    other.feed("whole\n", nothing);
    other.finish(nothing);
    CHECK(nothing == "[rank 3] whole\n");
  }
}

TEST_CASE("carriage-return segments (progress bars) are written with their '\\r'", "[line_prefixer]") {
  LinePrefixer prefixer(kPrefix);
  std::string out;
  prefixer.feed("10%\r20%\r", out);
  CHECK(out == "[rank 3] 10%\r[rank 3] 20%\r");
  SECTION("a bar closed by a newline") {
    prefixer.feed("100%\n", out);
    CHECK(out == "[rank 3] 10%\r[rank 3] 20%\r[rank 3] 100%\n");
  }
  SECTION("a bar split across chunks") {
    out.clear();
    prefixer.feed("3", out);
    prefixer.feed("0%", out);
    CHECK(out.empty());
    prefixer.feed("\r", out);
    CHECK(out == "[rank 3] 30%\r");
  }
}

TEST_CASE("\"\\r\\n\" ends the line without an extra prefixed empty line", "[line_prefixer]") {
  SECTION("in one chunk") {
    CHECK(feedAll(kPrefix, "windows\r\nline two\r\n") == "[rank 3] windows\r\n[rank 3] line two\r\n");
  }
  SECTION("split between '\\r' and '\\n'") {
    LinePrefixer prefixer(kPrefix);
    std::string out;
    prefixer.feed("abc\r", out);
    prefixer.feed("\n", out);
    CHECK(out == "[rank 3] abc\r\n");
  }
  SECTION("after a progress bar") {
    CHECK(feedAll(kPrefix, "1/3\r2/3\r3/3\r\nnext\n") == "[rank 3] 1/3\r[rank 3] 2/3\r[rank 3] 3/3\r\n[rank 3] next\n");
  }
  SECTION("a second newline is an ordinary empty line") {
    CHECK(feedAll(kPrefix, "a\r\n\n") == "[rank 3] a\r\n[rank 3] \n");
  }
}

TEST_CASE("previewProgress shows the unfinished segment of a progress bar only", "[line_prefixer]") {
  LinePrefixer prefixer(kPrefix);
  std::string out;
  SECTION("nothing before any '\\r'") {
    prefixer.previewProgress(out);
    CHECK(out.empty());
    prefixer.feed("an ordinary unfinished line", out);
    prefixer.previewProgress(out);
    CHECK(out.empty());
  }
  SECTION("nothing right after a '\\r' when no new text has come") {
    prefixer.feed("10%\r", out);
    out.clear();
    prefixer.previewProgress(out);
    CHECK(out.empty());
  }
  SECTION("the pending text after a '\\r', ended by '\\r'") {
    prefixer.feed("10%\r5", out);
    out.clear();
    prefixer.previewProgress(out);
    CHECK(out == "[rank 3] 5\r");
    SECTION("previewing does not consume the pending text") {
      prefixer.feed("0%\r", out);
      CHECK(out == "[rank 3] 5\r[rank 3] 50%\r");
    }
    SECTION("finish() still writes it, with a newline") {
      prefixer.finish(out);
      CHECK(out == "[rank 3] 5\r[rank 3] 5\n");
    }
  }
  SECTION("nothing once a newline has ended the bar") {
    prefixer.feed("10%\rdone\nnew line", out);
    out.clear();
    prefixer.previewProgress(out);
    CHECK(out.empty());
  }
}

TEST_CASE("an empty prefix passes text ending in a newline through unchanged", "[line_prefixer]") {
  for (std::string text : {std::string("plain\n"), std::string("\n\n\n"), std::string("a\r\nb\n"),
                           std::string("bar 1\rbar 2\rdone\n"), std::string("x\r\r\n"), randomText(5000, 7) + "\n"}) {
    CHECK(feedAll("", text) == text);
    CHECK(feedInChunks("", text, 3) == text);
  }
}

TEST_CASE("byte-by-byte feeding gives the same output as one-shot feeding", "[line_prefixer]") {
  for (unsigned seed : {1u, 2u, 3u, 42u}) {
    const std::string text = randomText(4000, seed);
    const std::string whole = feedAll(kPrefix, text);
    INFO("seed " << seed);
    CHECK(feedInChunks(kPrefix, text, 1) == whole);
    CHECK(feedInChunks(kPrefix, text, 7) == whole);
    CHECK(feedInChunks(kPrefix, text, 64) == whole);
    // Sanity: the prefix really was applied.
    CHECK(whole.size() > text.size());
  }
}

TEST_CASE("a megabyte of lines round-trips: strip the prefixes and get the input back", "[line_prefixer]") {
  std::mt19937 generator(2024);
  std::uniform_int_distribution<int> lineLength(0, 300);
  std::string text;
  size_t lines = 0;
  while (text.size() < (1u << 20)) {
    int length = lineLength(generator);
    for (int index = 0; index < length; ++index) text += static_cast<char>(' ' + (index + lines) % 90);
    text += '\n';
    ++lines;
  }

  LinePrefixer prefixer(kPrefix);
  std::string out;
  const size_t chunkSizes[] = {4096, 1, 333, 65536, 17};
  size_t start = 0;
  for (size_t round = 0; start < text.size(); ++round) {
    size_t size = chunkSizes[round % 5];
    prefixer.feed(std::string_view(text).substr(start, size), out);
    start += size;
  }
  prefixer.finish(out);

  REQUIRE(out.size() == text.size() + lines * kPrefix.size());
  std::string stripped;
  stripped.reserve(text.size());
  size_t lineCount = 0;
  for (size_t position = 0; position < out.size();) {
    REQUIRE(out.compare(position, kPrefix.size(), kPrefix) == 0);
    position += kPrefix.size();
    size_t newline = out.find('\n', position);
    REQUIRE(newline != std::string::npos);
    stripped.append(out, position, newline + 1 - position);
    position = newline + 1;
    ++lineCount;
  }
  CHECK(lineCount == lines);
  CHECK(stripped == text);
}

TEST_CASE("in a file or pipe, carriage-return segments become whole lines and bare '\\r's vanish", "[line_prefixer]") {
  LinePrefixer prefixer("[rank 0] ", /*terminal=*/false);
  std::string out;
  // tqdm's way: "\r" then the bar; "\r\n" at the very end.
  prefixer.feed("\rstep 1/3", out);
  prefixer.previewProgress(out);  // nothing to preview where nothing redraws
  CHECK(out.empty());
  prefixer.feed("\rstep 2/3\rstep 3/3\r\n", out);
  CHECK(out == "[rank 0] step 1/3\n[rank 0] step 2/3\n[rank 0] step 3/3\n");
  out.clear();
  prefixer.feed("done\n", out);
  prefixer.finish(out);
  CHECK(out == "[rank 0] done\n");
  CHECK(out.find('\r') == std::string::npos);
}
