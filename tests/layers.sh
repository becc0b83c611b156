#!/bin/sh
# The rooms' includes run one way (scripts/layers.sh --check, doc/design.md).
top=$(cd "$(dirname "$0")/.." && pwd)
exec sh "$top/scripts/layers.sh" --check
