#!/usr/bin/env bash
# lint-imports.sh — fail on an import that runs against the project's layers
# (run by `make lint`). Non-test imports only: tests may reach anything.
#
#   - the webhook package (auditsink) is imported only by mains, the wiring
#     package (internal/app) and test tooling;
#   - internal/app only by mains;
#   - store (the record's storage) imports none of the services above it;
#   - filter (the rule engine) stays pure: no store, no database driver, no
#     clientset, no HTTP.
#
# KNOWN lists the upward imports that predate this check; the house reshape
# (issue 14) removes them, and each removal must delete its line here.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/options-record/options-record

KNOWN=()

edges=$(go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... |
	sed "s|${mod}|.|g" |
	awk '{for (i = 2; i <= NF; i++) print $1 " -> " $i}')

bad=()
while IFS= read -r e; do
	from=${e%% -> *}
	to=${e##* -> }
	why=""
	case "$to" in
	./auditsink | ./auditsink/*)
		case "$from" in ./cmd/* | ./internal/app | ./test/* | ./auditsink | ./auditsink/*) ;; *) why="only mains, internal/app and tests import the webhook package" ;; esac
		;;
	./internal/app)
		case "$from" in ./cmd/* | ./test/*) ;; *) why="only mains import the wiring package" ;; esac
		;;
	esac
	case "$from" in
	./store | ./store/*)
		case "$to" in ./auditsink* | ./filter* | ./api/restore* | ./internal/app*) why="store imports no service above it" ;; esac
		;;
	./record)
		case "$to" in ./store) ;; ./*) why="record is the model every service imports: it imports only the store's row types" ;; esac
		;;
	./journal)
		case "$to" in ./store) ;; ./*) why="the journal stands in front of the store and imports nothing else of ours" ;; esac
		;;
	./filter)
		case "$to" in ./store* | ./auditsink* | github.com/jackc/* | k8s.io/client-go/* | net/http) why="filter is a pure rule engine" ;; esac
		;;
	esac
	[[ -z "$why" ]] && continue
	for k in "${KNOWN[@]}"; do
		[[ "$e" == "$k" ]] && continue 2
	done
	bad+=("$e: $why")
done <<<"$edges"

# A known exception that no longer exists must leave the list.
for k in "${KNOWN[@]}"; do
	grep -qxF -- "$k" <<<"$edges" || bad+=("$k: listed in KNOWN but gone: delete its line")
done

if ((${#bad[@]})); then
	printf 'import layering:\n' >&2
	printf '  %s\n' "${bad[@]}" >&2
	exit 1
fi
