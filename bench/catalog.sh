# Sourced by the bench scripts (not run alone): bench_catalog DIR N VARIANT writes
# into DIR the default catalog (catalog/default of the repository at $root) plus a
# manual-only suite "bench" of N cells in zz-bench.yaml:
#   VARIANT fixture: N copies of the process-exit case for the fixture-pass profile
#                    (cases bench-exit-<i>, graded on the run's status);
#   VARIANT exec:    N copies of a message-marker case for the example exec agent
#                    (profile bench-exec running examples/exec-agent.py; cases
#                    bench-marker-<i>, graded by message_exact and run_status).
bench_catalog() {
  local dir=$1 n=$2 variant=$3 profile prefix i
  case $variant in
    fixture) profile=fixture-pass prefix=bench-exit ;;
    exec) profile=bench-exec prefix=bench-marker ;;
    *) echo "bench_catalog: variant must be fixture or exec, not $variant" >&2; return 2 ;;
  esac
  mkdir -p "$dir"
  cp -R "$root"/catalog/default/. "$dir/" # the YAML files and the files/ tree its cases name
  {
    if [[ $variant == exec ]]; then
      cat <<P
profiles:
  - id: bench-exec
    label: The example exec agent (examples/exec-agent.py)
    generation: native
    driver: exec
    driverConfig: {command: "$root/examples/exec-agent.py", timeoutMs: 60000}
    provider: example
    model: example/no-model
    modelQualification: {source: builtin, qualificationId: "builtin:example"}
    supportedEnvironments: [local]
P
    fi
    echo "cases:"
    for i in $(seq -w 1 "$n"); do
      if [[ $variant == exec ]]; then
        cat <<C
  - id: bench-marker-$i
    label: Exec agent marker $i
    groups: [core]
    workMode: standard
    flow: single_turn
    expectedRunCount: 1
    attemptTimeoutMs: {local: 60000}
    expectedTerminalState: {issue: done, run: succeeded}
    title: "Bench marker $i {{nonce}}"
    prompt: >-
      Post exactly the text {{marker}} as your final message on this task, with nothing
      before or after it, then mark the task done.
    marker: "BENCH-MARKER-$i-{{nonce}}"
    matchers:
      - {kind: message_exact, expected: "{{marker}}"}
      - {kind: run_status, expected: "{{runStatus}}"}
C
      else
        cat <<C
  - id: bench-exit-$i
    label: Fixture process exit $i
    groups: [calibration]
    workMode: standard
    flow: process_exit
    expectedRunCount: 1
    attemptTimeoutMs: {local: 60000}
    expectedTerminalState: {run: succeeded}
    matchers:
      - {kind: run_status, expected: "{{runStatus}}"}
C
      fi
    done
    echo "suites:"
    echo "  - id: bench"
    echo "    label: Benchmark"
    echo "    description: $n $profile cells."
    echo "    manualOnly: true"
    echo "    profiles: [$profile]"
    echo "    environments: [local]"
    echo "    expectedMatrixSize: $n"
    echo "    cases:"
    for i in $(seq -w 1 "$n"); do echo "      - $prefix-$i"; done
  } > "$dir/zz-bench.yaml"
}
