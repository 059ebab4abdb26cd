#!/usr/bin/env bash
# The numbers docs/checking.md quotes from a quick command (the gradient-check count and its largest relative
# error) are what the command gives now: tools/doc_numbers.sh fails naming the number that drifted, and
# `tools/doc_numbers.sh --update` writes the new one (--all also checks the quickstart summary and the
# fine-tuning table, which take minutes). Uses make test's own gradcheck --all log when it is fresh.
cd "$(dirname "$0")/.." || exit 1
GRADCHECK_LOG=build/test-logs/gradcheck-all.log tools/doc_numbers.sh
