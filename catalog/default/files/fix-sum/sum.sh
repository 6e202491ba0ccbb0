#!/bin/sh
# sum.sh N… prints the sum of its arguments (whole numbers); no argument sums to 0.
total=0
while [ "$#" -gt 1 ]; do
  total=$((total + $1))
  shift
done
echo "$total"
