// printable(), valid_utf8() and cut_to(): what reaches a terminal or a JSON
// document from a trace's strings.
#include <gtest/gtest.h>

#include "loupe/prof/safe_text.h"

using namespace loupe::prof;

namespace {

TEST(SafeText, PlainTextIsUnchanged) {
  EXPECT_EQ(printable("volta_sgemm_128x64_nn"), "volta_sgemm_128x64_nn");
  EXPECT_EQ(printable("aten::to \xC3\xA9t\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x94\xA5"),
            "aten::to \xC3\xA9t\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x94\xA5");
  EXPECT_EQ(valid_utf8("caf\xC3\xA9"), "caf\xC3\xA9");
}

TEST(SafeText, ControlCharactersBecomeVisibleEscapes) {
  EXPECT_EQ(printable(std::string_view("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("\x1b]52;c;SGk=\x07"), "\\x1b]52;c;SGk=\\x07");
  EXPECT_EQ(printable("x\r\ny\tz\x7f"), "x\\r\\ny\\tz\\x7f");
  // C1 controls (CSI as U+009B), a bidirectional override, a line separator.
  EXPECT_EQ(printable("\xC2\x9B"
                      "2J"),
            "\\u009b2J");
  EXPECT_EQ(printable("abc\xE2\x80\xAE"
                      "fed"),
            "abc\\u202efed");
  EXPECT_EQ(printable("a\xE2\x80\xA8"
                      "b"),
            "a\\u2028b");
}

TEST(SafeText, InvalidBytesAreShownOneByOne) {
  EXPECT_EQ(printable("f\xFF\xFEok"), "f\\xff\\xfeok");
  EXPECT_EQ(printable("\xC0\xAF"), "\\xc0\\xaf");  // an overlong '/'
}

// The example of the Unicode standard, section 3.9 (U+FFFD substitution of
// maximal subparts): 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 becomes
// a FFFD FFFD FFFD b FFFD c FFFD FFFD d (F1 80 80, E1 80 and C2 are each
// the start of a sequence that ends too soon).
TEST(SafeText, InvalidUtf8IsReplacedByMaximalSubparts) {
  uint64_t replaced = 0;
  std::string out = valid_utf8("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", &replaced);
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(out, "a" + r + r + r + "b" + r + "c" + r + r + "d");
  EXPECT_EQ(replaced, 6u);
  // Surrogates (ED A0 80) and code points above U+10FFFF (F4 90 80 80).
  replaced = 0;
  EXPECT_EQ(valid_utf8("\xED\xA0\x80", &replaced), r + r + r);
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80", &replaced), r + r + r + r);
  EXPECT_EQ(replaced, 7u);
  // A truncated sequence at the end is one maximal subpart.
  EXPECT_EQ(valid_utf8("ok\xE2\x82"), "ok" + r);
}

TEST(SafeText, CutsAtACharacterBoundaryAndSaysSo) {
  EXPECT_EQ(cut_to("abcdef", 6), "abcdef");
  EXPECT_EQ(cut_to("abcdef", 4), "abcd... (2 bytes cut)");
  // "é" is two bytes: a cut through it keeps the whole character out.
  EXPECT_EQ(cut_to("ab\xC3\xA9z", 3), "ab... (3 bytes cut)");
  std::string big(100'000, 'k');
  EXPECT_EQ(printable(big, kTextNameLimit), std::string(kTextNameLimit, 'k') + "... (98,976 bytes cut)");
}

}  // namespace
