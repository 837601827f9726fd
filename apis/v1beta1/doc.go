// Package v1beta1 is version v1beta1 of the valkey.fsm.dev API: ValkeyCluster, ValkeyBackup
// and ValkeyACL, their validation rules (OpenAPI and CEL, enforced by the API server) and the
// defaults that depend on another field. It is the hub of the conversions (every other
// version converts to and from it) and the version the API server stores; v1alpha1 stays
// served and converts losslessly both ways (apis/v1alpha1/*_conversion.go).
//
// Like v1alpha1, the package imports only k8s.io/apimachinery and k8s.io/api: the Hub
// methods satisfy controller-runtime's conversion.Hub without importing it.
//
// # Names and why
//
// v1beta1 keeps every v1alpha1 name and rule except these, each decided once:
//
//   - spec.replicas counts the replicas of each primary, not the pods: replicas: 1 is a
//     primary and one replica (v1alpha1's replicas: 2). That is what the official Valkey
//     operator's and Bitnami's users already write, and what "replica" means in Valkey
//     itself. Unset, it follows the topology: 1 for Replication and Cluster, none for
//     Standalone, which refuses any other value, so a Standalone manifest needs no count.
//     The name stays replicas because it is also the scale subresource's path: kubectl
//     scale --replicas and autoscalers change it.
//   - status.pods and status.readyPods are v1alpha1's status.replicas and readyReplicas,
//     which counted pods; status.replicas now counts like spec.replicas (the scale
//     subresource's current count), with status.selector beside it for autoscalers.
//   - One shape names a Secret: an object named ...SecretRef. Where the key is the user's
//     choice it is {name, key} (auth.passwordSecretRef, was auth.existingSecret; a
//     ValkeyACL's passwordSecretRefs, was passwordSecrets; key defaults to password).
//     Where the keys are fixed by what the Secret holds it is {name} with no key to get
//     wrong: tls.secretRef (tls.crt, tls.key, ca.crt; was tls.secretName) and
//     backup.store.credentialsSecretRef (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; was
//     credentialsSecret). imagePullSecrets keeps the Pod spec's own shape, since it is
//     copied into the pods as it is.
//   - backup.store.credentialsSecretRef is optional: without it the operator uses the AWS
//     SDK's default credential chain (IRSA, EKS Pod Identity, instance roles), where its
//     administrator allows it, so that platforms that forbid static keys can back up.
//   - tls.issuerRef {name, kind, group} is cert-manager's own issuerRef (was tls.issuer),
//     with tls.duration and tls.renewBefore beside it as in a cert-manager Certificate.
//   - tls.mode values say which listeners run: Disabled (plain only), PlainAndTLS (was
//     Both: plain and TLS side by side while clients migrate), TLSOnly. "Both" did not say
//     both of what; "Optional" would hide that plain TCP stays open to every client.
//   - Every enum is PascalCase, as Kubernetes' own are: node roles are Primary, Replica and
//     Unknown (were primary, replica, unknown), a backup's mode Replication or Cluster (was
//     replication or cluster, now the topology names it was taken from). S3's own values
//     (AES256, aws:kms) stay as S3 spells them.
//   - ValkeyBackup and ValkeyACL have status.conditions with Ready, so that kubectl wait
//     --for=condition=Ready works on every kind; phase stays for people.
//   - Printer columns fit every topology: Shards and Slots are wide-only (kubectl get -o
//     wide), since they mean something only for Cluster; Version shows status.valkeyVersion;
//     a backup's Size column shows status.sizeHuman ("1.5 GiB"), a string because a
//     printer column cannot format bytes, while status.size keeps the bytes for scripts.
//     The name sits beside size in every listing of the fields.
//   - The day-one pod knobs are flat in spec, beside v1alpha1's nodeSelector, tolerations,
//     affinity and topologySpreadConstraints, and named as in a Pod spec
//     (imagePullSecrets, imagePullPolicy, priorityClassName, serviceAccountName), so that
//     they can be copied from one; pod labels and annotations are podLabels and
//     podAnnotations, since labels alone would read as the ValkeyCluster's own. A spec.pod
//     block would have split the pod's settings between two places.
//   - spec.service {type, annotations} shapes the client Services (a LoadBalancer, a cloud's
//     annotations); the headless Service peers use is the operator's.
//   - Destructive intent is spelled out: spec.restoreFrom.discardCurrentData: true is needed
//     to set or change restoreFrom on an existing ValkeyCluster, and the name says what it
//     costs (every write since the backup); a new cluster restores without it.
//     spec.deletion.finalBackup: true (opt-in) takes a last backup before a deleted
//     cluster's objects go.
//   - Defaults that depend on another field are the operator's (or the mutating webhook's),
//     not the CRD's: replicas by topology, shards (3, Cluster only) and storage.size by
//     profile: 10Gi for Durable, which keeps an append-only file and snapshots, 1Gi for Cache,
//     which keeps only replication state (v1alpha1 defaulted every profile to 1Gi in the
//     CRD; a cluster moved from v1alpha1 keeps the size it has).
//
// +kubebuilder:object:generate=true
// +groupName=valkey.fsm.dev
package v1beta1
