#!/bin/sh
# The verifier: reward 1 when the greeting is exact, else 0 (Harbor's reward file).
mkdir -p /logs/verifier
if [ "$(sh /app/greet.sh World)" = "Hello, World!" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
