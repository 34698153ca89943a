// support/unified_diff: the format of `diff -u`, on small texts whose diffs are known.
#include <doctest/doctest.h>

#include <string>

#include "support/unified_diff.h"

using spgen::unified_diff;

TEST_CASE("unified_diff: equal texts give nothing; one changed line gives one hunk with three lines of context") {
  CHECK(unified_diff("a\nb\n", "a\nb\n", "x", "y").empty());
  const std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  const std::string after = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
  CHECK(unified_diff(before, after, "old", "new") ==
        "--- old\n+++ new\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
}

TEST_CASE("unified_diff: changes far apart are separate hunks, near ones share one; insertions and deletions count") {
  std::string before, after;
  for (int k = 1; k <= 20; ++k) {
    before += std::to_string(k) + "\n";
    if (k == 2) after += "inserted\n";
    if (k != 18) after += std::to_string(k) + "\n";
  }
  CHECK(unified_diff(before, after, "a", "b") ==
        "--- a\n+++ b\n"
        "@@ -1,4 +1,5 @@\n 1\n+inserted\n 2\n 3\n 4\n"
        "@@ -15,6 +16,5 @@\n 15\n 16\n 17\n-18\n 19\n 20\n");
  // Two changes 6 unchanged lines apart: one hunk.
  CHECK(unified_diff("a\n1\n2\n3\n4\n5\n6\nb\n", "A\n1\n2\n3\n4\n5\n6\nB\n", "x", "y") ==
        "--- x\n+++ y\n@@ -1,8 +1,8 @@\n-a\n+A\n 1\n 2\n 3\n 4\n 5\n 6\n-b\n+B\n");
}

TEST_CASE("unified_diff: an empty side and a missing final newline") {
  CHECK(unified_diff("", "x\ny\n", "a", "b") == "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n");
  CHECK(unified_diff("x\n", "", "a", "b") == "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n");
  CHECK(unified_diff("x\n", "x", "a", "b") == "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file\n");
}
