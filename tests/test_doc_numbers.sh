#!/usr/bin/env bash
# The numbers docs/checking.md quotes from a quick command hold now: the gradient-check count exactly, and its
# largest relative error within the bound the text promises (1e-6; another value than the quoted one is a
# warning, since its last digits move between CPUs): tools/doc_numbers.sh fails naming what broke, and
# `tools/doc_numbers.sh --update` writes the new values (--all also checks the quickstart summary and the
# fine-tuning table, which take minutes). Uses make test's own gradcheck --all log when it is fresh.
cd "$(dirname "$0")/.." || exit 1
GRADCHECK_LOG=build/test-logs/gradcheck-all.log tools/doc_numbers.sh
