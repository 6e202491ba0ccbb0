#!/bin/sh
# Prints the sum of its two arguments (it has a bug).
echo $(( $1 - $2 ))
