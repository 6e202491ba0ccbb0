#!/bin/sh
# The tests of sum.sh: each check prints PASS or FAIL, then a count line, and a JUnit
# report is written to report.xml. Exits 1 when a check fails.
passed=0 failed=0 cases=""
check() {
  got=$(sh sum.sh $2)
  if [ "$got" = "$3" ]; then
    passed=$((passed + 1)); cases="$cases<testcase name=\"$1\"/>"; echo "PASS $1"
  else
    failed=$((failed + 1)); cases="$cases<testcase name=\"$1\"><failure message=\"want $3, got $got\"/></testcase>"; echo "FAIL $1: want $3, got $got"
  fi
}
check no-arguments "" 0
check one-argument "7" 7
check three-arguments "1 2 3" 6
check negative "5 -8" -3
printf '<testsuite name="sum">%s</testsuite>\n' "$cases" > report.xml
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
