#!/usr/bin/env bash
# The operator on the cluster of the current kubeconfig context (KUBECONFIG, or ~/.kube/config),
# for make deploy-operator, make undeploy-operator and make run:
#
#   deploy     helm upgrade --install of charts/valkey-operator into OPERATOR_NAMESPACE, waiting
#              for the operator to be ready. IMAGE=repository:tag runs that image instead of the
#              chart's default (the release's); HELM_ARGS are more helm arguments (--set ...).
#   undeploy   removes what deploy installed: the release, the journal claims, the leader
#              election Lease, the namespace and the CRDs when deploy created them. It refuses
#              while ValkeyClusters, ValkeyBackups or ValkeyACLs exist and the CRDs would go
#              (deleting a CRD deletes every object of its kind): delete them first, or
#              KEEP_CRDS=1 to remove only the operator.
#   run-setup  what the operator needs to run outside the cluster (make run): the namespace of
#              its leader election Lease, and the CRDs when missing.
#
# What deploy and run-setup create is annotated valkey.fsm.dev/installed-by=make, so that
# undeploy removes it and nothing else: a namespace or CRDs that were there before stay.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
kubectl=${KUBECTL:-kubectl}
helm=("$root/hack/helm.sh")
ns=${OPERATOR_NAMESPACE:-valkey-operator-system}
release=${OPERATOR_RELEASE:-valkey-operator}
mark=valkey.fsm.dev/installed-by
crds=(valkeyclusters.valkey.fsm.dev valkeybackups.valkey.fsm.dev valkeyacls.valkey.fsm.dev)
# The operator's leader election Lease (operator/manager: LeaderElectionID).
lease=valkey-operator.valkey.fsm.dev

say() { echo "$(basename "$0"): $*" >&2; }

# installed_by_make NAME... succeeds when the object (kind/name, cluster-scoped) carries the mark.
installed_by_make() {
	[ "$("$kubectl" get "$1" -o "jsonpath={.metadata.annotations.valkey\.fsm\.dev/installed-by}" 2>/dev/null)" = make ]
}

# ensure_namespace creates the operator's namespace, marked, when it does not exist.
ensure_namespace() {
	if ! "$kubectl" get namespace "$ns" >/dev/null 2>&1; then
		"$kubectl" create namespace "$ns"
		"$kubectl" annotate namespace "$ns" "$mark=make" >/dev/null
	fi
}

# crd_owner prints the Helm release (namespace/name) that manages the ValkeyCluster CRD, "-"
# when it exists without one, nothing when it does not exist.
crd_owner() {
	"$kubectl" get crd "${crds[0]}" -o 'jsonpath={.metadata.annotations.meta\.helm\.sh/release-namespace}/{.metadata.annotations.meta\.helm\.sh/release-name}{"\n"}' 2>/dev/null |
		sed 's#^/$#-#' || true
}

deploy() {
	local args=() owner fresh=""
	if [ -n "${IMAGE:-}" ]; then
		# repository:tag, the repository possibly with a registry port (localhost:5000/x:dev).
		if [[ "${IMAGE##*/}" != *:* || "$IMAGE" == *@* ]]; then
			say "IMAGE=$IMAGE: want repository:tag (as make image IMAGE=... tags it)"
			exit 2
		fi
		args+=(--set "image.repository=${IMAGE%:*}" --set "image.tag=${IMAGE##*:}")
	fi
	owner=$(crd_owner)
	case "$owner" in
	"") fresh=1 ;;
	"$ns/$release") ;;
	-)
		# Applied with kubectl (the release's CRD file, or make run): the chart takes them over
		# and fills in their conversion webhook.
		say "taking over the CRDs installed without Helm"
		args+=(--take-ownership)
		;;
	*)
		say "the CRDs belong to the Helm release $owner: installing the operator without them (crds.enabled=false)"
		args+=(--set crds.enabled=false)
		;;
	esac
	ensure_namespace
	# shellcheck disable=SC2086 # HELM_ARGS are words
	"${helm[@]}" upgrade --install "$release" "$root/charts/valkey-operator" --namespace "$ns" \
		--wait --timeout "${DEPLOY_TIMEOUT:-5m}" "${args[@]}" ${HELM_ARGS:-}
	if [ -n "$fresh" ]; then
		for crd in "${crds[@]}"; do "$kubectl" annotate crd "$crd" "$mark=make" --overwrite >/dev/null; done
	fi
}

undeploy() {
	local remove_crds="" remove_ns="" left
	if [ -z "${KEEP_CRDS:-}" ] && installed_by_make "crd/${crds[0]}"; then
		remove_crds=1
		left=$(for crd in "${crds[@]}"; do "$kubectl" get "$crd" --all-namespaces -o name 2>/dev/null || true; done)
		if [ -n "$left" ]; then
			say "these would be deleted with the CRDs make installed:"
			echo "$left" >&2
			say "delete them first (a ValkeyCluster's deletion takes its pods, and its volumes as its spec says), or run with KEEP_CRDS=1 to remove the operator only"
			exit 1
		fi
	fi
	installed_by_make "namespace/$ns" && remove_ns=1
	if "${helm[@]}" status "$release" --namespace "$ns" >/dev/null 2>&1; then
		"${helm[@]}" uninstall "$release" --namespace "$ns" --wait --timeout "${DEPLOY_TIMEOUT:-5m}"
	fi
	if [ -n "$remove_ns" ]; then
		"$kubectl" delete namespace "$ns" --wait --ignore-not-found
	elif "$kubectl" get namespace "$ns" >/dev/null 2>&1; then
		# Helm keeps the journal's claims (the audit trail) and never made the Lease.
		"$kubectl" delete pvc --namespace "$ns" --selector "app.kubernetes.io/name=valkey-operator,app.kubernetes.io/instance=$release" --wait --ignore-not-found
		"$kubectl" delete lease "$lease" --namespace "$ns" --ignore-not-found
	fi
	if [ -n "$remove_crds" ]; then
		"$kubectl" delete crd "${crds[@]}" --wait --ignore-not-found
	fi
}

run_setup() {
	ensure_namespace
	if [ -z "$(crd_owner)" ]; then
		say "installing the CRDs (nothing outside the cluster can serve their conversion webhook: v1alpha1 is not served while they are the only ones; write v1beta1)"
		"$kubectl" apply --server-side --field-manager=make-run -f "$root/charts/valkey-operator/files/crds" >/dev/null
		for crd in "${crds[@]}"; do
			# Without a conversion webhook the API server would relabel v1alpha1 objects as
			# v1beta1 and prune the fields that differ: refuse v1alpha1 instead.
			"$kubectl" patch crd "$crd" --type=json -p '[{"op":"test","path":"/spec/versions/0/name","value":"v1alpha1"},{"op":"replace","path":"/spec/versions/0/served","value":false}]' >/dev/null
			"$kubectl" annotate crd "$crd" "$mark=make" --overwrite >/dev/null
		done
		"$kubectl" wait --for condition=Established --timeout 60s "${crds[@]/#/crd/}" >/dev/null
		# The API server stops serving a version a moment after the CRD says so.
		for _ in $(seq 60); do
			"$kubectl" get --raw /apis/valkey.fsm.dev/v1alpha1 >/dev/null 2>&1 || return 0
			sleep 0.5
		done
		say "the API server still serves valkey.fsm.dev/v1alpha1"
		exit 1
	fi
}

case "${1:-}" in
deploy) deploy ;;
undeploy) undeploy ;;
run-setup) run_setup ;;
*)
	echo "usage: $0 deploy|undeploy|run-setup" >&2
	exit 2
	;;
esac
