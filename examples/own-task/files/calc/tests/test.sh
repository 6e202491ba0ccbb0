#!/bin/sh
# The verifier: runs calc.sh on three cases, writes report.xml (JUnit) and exits 1
# when a case fails.
passed=0 failed=0 cases=""
check() {
	got=$(sh ./calc.sh "$1" "$2" 2>&1)
	if [ "$got" = "$3" ]; then
		passed=$((passed + 1)); cases="$cases<testcase name=\"$1+$2\"/>"
		echo "ok   $1 + $2 = $3"
	else
		failed=$((failed + 1)); cases="$cases<testcase name=\"$1+$2\"><failure message=\"got $got\"/></testcase>"
		echo "FAIL $1 + $2: want $3, got $got"
	fi
}
check 1 2 3
check 20 22 42
check 0 0 0
printf '<testsuite name="calc" tests="%d" failures="%d">%s</testsuite>\n' $((passed + failed)) "$failed" "$cases" > report.xml
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
