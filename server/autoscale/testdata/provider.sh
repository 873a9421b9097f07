#!/bin/sh
# A fake external provider for external_test.go: one instance per create.
n=0
while IFS= read -r line; do
  case "$line" in
    *'"op":"create"'*) n=$((n+1)); echo "{\"ids\":[\"ext-$n\"]}" ;;
    *'"op":"destroy"'*) echo '{}' ;;
    *'"op":"list"'*) echo "{\"instances\":[{\"id\":\"ext-1\",\"pool\":\"gpu\",\"spot\":true,\"price\":2.5}]}" ;;
    *'"op":"interruptions"'*) echo '{"interruptions":[{"id":"ext-1","deadline":"2m"}]}' ;;
    *) echo '{"error":"unknown op"}' ;;
  esac
done
