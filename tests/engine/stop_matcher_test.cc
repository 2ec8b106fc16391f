// Stop strings across token boundaries, kept out of the output (or kept, when
// asked).
#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ladder::engine {
namespace {

std::string run_stops(std::vector<std::string> stops, std::vector<std::string> pieces, bool* stopped) {
  StopMatcher m(std::move(stops));
  std::string out;
  for (const auto& p : pieces) {
    auto step = m.feed(p);
    out += step.emit;
    if (step.stopped) {
      *stopped = true;
      return out;
    }
  }
  *stopped = false;
  return out + m.flush();
}

TEST(StopMatcher, MatchesAcrossPiecesAndCutsTheStop) {
  bool stopped = false;
  EXPECT_EQ(run_stops({"END"}, {"hello E", "N", "D world"}, &stopped), "hello ");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(run_stops({"\n\n", "ab"}, {"x\n", "\ny"}, &stopped), "x");
  EXPECT_TRUE(stopped);
  // A prefix that does not complete is released.
  EXPECT_EQ(run_stops({"END"}, {"EN", "x", "E"}, &stopped), "ENxE");
  EXPECT_FALSE(stopped);
  // The earliest stop wins, whichever is listed first.
  EXPECT_EQ(run_stops({"cd", "b"}, {"abcd"}, &stopped), "a");
  EXPECT_TRUE(stopped);
}

TEST(StopMatcher, IncludeStopKeepsTheStopThatEndedIt) {
  StopMatcher m({"cd", "b"}, /*include_stop=*/true);
  auto step = m.feed("abcd");
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(step.emit, "ab");
  StopMatcher across({"END"}, /*include_stop=*/true);
  EXPECT_EQ(across.feed("x E").emit, "x ");
  step = across.feed("ND tail");
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(step.emit, "END");
}

TEST(StopMatcher, HoldsBackOnlyPossiblePrefixes) {
  StopMatcher m({"stop"});
  EXPECT_EQ(m.feed("the st").emit, "the ");
  EXPECT_EQ(m.feed("ory").emit, "story");
  EXPECT_EQ(m.flush(), "");
}

}  // namespace
}  // namespace ladder::engine
