#!/bin/sh
# The model test's reference checked against the running Linux kernel
# (MODEL_ORACLE=posix: a real directory tree driven with *at() system calls
# as each caller), so that the rules tests/model_test holds the library to
# are Linux's: set-id bits, setgid directories, rename loops, permissions.
# Needs root (setfsuid, chown); skips (77) otherwise.
: "${builddir:=$(cd "$(dirname "$0")/.." && pwd)}"
MODEL_ORACLE=posix MODEL_SEQUENCES=${MODEL_SEQUENCES:-60} exec "$builddir/tests/model_test"
