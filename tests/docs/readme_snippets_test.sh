#!/usr/bin/env bash
# Compiles every ```cpp block of the README, so the manual cannot drift from the API.
# Each block becomes the body of a function in one translation unit (its #include lines go to
# the top), with #line directives so that an error points at README.md itself. The prelude
# declares what the snippets take as given (a task's helpers, a scheduler built earlier), and
# nothing else: a missing include or `using namespace` in a snippet is an error here too.
set -euo pipefail
compiler="$1"
include_dir="$2"
readme="$3"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

awk -v readme="$readme" '
  /^```cpp[[:space:]]*$/ { inside = 1; n++; body[n] = ""; start[n] = NR + 1; next }
  inside && /^```/ { inside = 0; next }
  inside && /^#include/ { includes = includes $0 "\n"; body[n] = body[n] "\n"; next }
  inside { body[n] = body[n] $0 "\n" }
  END {
    if (n == 0) { print "no cpp block in " readme > "/dev/stderr"; exit 1 }
    printf "%s", includes
    print "#include <ata/ata.hpp>"
    print "#include <cstdio>"
    print "#include <thread>"
    print "#include <vector>"
    print "// What the snippets assume exists."
    print "double run_task_on(std::size_t worker);"
    print "std::vector<double> sample_gradient(std::size_t task);"
    print "double expensive_step(std::size_t task);"
    print "extern ata::runtime::WorkerPool pool;"
    print "extern ata::runtime::BatchScheduler scheduler;"
    print "extern ata::AtaEmpiricalPolicy policy;"
    for (i = 1; i <= n; i++) {
      printf "void readme_snippet_%d() {\n#line %d \"%s\"\n%s}\n", i, start[i], readme, body[i]
    }
    print n " snippets" > "/dev/stderr"
  }
' "$readme" >"$work/readme_snippets.cpp"

"$compiler" -std=c++20 -fsyntax-only -Wall -Wno-unused-variable -Wno-unused-but-set-variable \
  -I "$include_dir" "$work/readme_snippets.cpp"
echo "README: every C++ snippet compiles"
