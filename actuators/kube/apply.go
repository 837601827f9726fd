package kube

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the operator's field manager name.
const FieldOwner = "valkey-operator"

// Result tells what Apply did, for logs, Events and the zero-writes benchmark.
type Result struct {
	Created, Updated, Deleted []string
}

// Writes is how many API writes Apply made.
func (r Result) Writes() int { return len(r.Created) + len(r.Updated) + len(r.Deleted) }

// ErrNotOurs is an object in the way: it has the name an owned object must have, and this
// cluster does not control it (a user's own Service, say). The operator never takes it over
// (deleting the cluster would then garbage-collect it) nor changes it.
var ErrNotOurs = errors.New("not this cluster's")

// Apply creates the objects that are missing and repairs those that drifted from d (someone
// edited or deleted them), writing nothing when everything is as it should be. An object that
// cannot be written does not stop the others: every failure is returned, joined. Fields the
// API server or other controllers fill in (a Service's ClusterIP, defaults) are not drift:
// only what d sets is compared. With statefulSet it applies the StatefulSets alone
// (d.StatefulSets, one per shard, from ForAction): their changes (pod count, template) are the
// machine's decisions (EnsureObjects); without, the
// supporting objects, which are simply kept as they should be on every turn. Neither blocks
// the other. c may see only the operator's own objects (a filtered cache); live reads the API
// server, to tell what stands in the way when a create finds the name taken.
func Apply(ctx context.Context, c client.Client, live client.Reader, d Desired, statefulSet bool) (Result, error) {
	var res Result
	var steps []step
	if statefulSet {
		for _, sts := range d.StatefulSets {
			steps = append(steps, statefulSetStep(sts))
		}
		if s := d.Sentinels; s != nil && s.Scaled {
			steps = append(steps, statefulSetStep(s.StatefulSet))
		}
	} else {
		steps = []step{
			{"ConfigMap", d.Config, &corev1.ConfigMap{}, func(cur client.Object) bool {
				return equality.Semantic.DeepEqual(d.Config.Data, cur.(*corev1.ConfigMap).Data)
			}, func(cur client.Object) { cur.(*corev1.ConfigMap).Data = d.Config.Data }},
			serviceStep(d.Headless), serviceStep(d.Client), serviceStep(d.Replicas),
		}
		if s := d.Sentinels; s != nil {
			// The sentinels start monitoring nothing, and the machine tells each what to
			// monitor (machine.SentinelMonitor). They are made at the spec's count; from then
			// on the count is the machine's, one sentinel at a time (EnsureObjects.Sentinels).
			steps = append(steps, serviceStep(s.Headless), serviceStep(s.Client), statefulSetKeepingCount(s.StatefulSet))
		}
	}
	if !statefulSet {
		for _, pdb := range []*policyv1.PodDisruptionBudget{d.PDB, d.sentinelPDB()} {
			if pdb != nil {
				steps = append(steps, pdbStep(pdb))
			}
		}
	}
	for _, np := range []*networkingv1.NetworkPolicy{d.NetworkPolicy, d.BusPolicy} {
		if np != nil && !statefulSet {
			steps = append(steps, networkPolicyStep(np))
		}
	}
	if d.Certificate != nil && !statefulSet {
		steps = append(steps, certificateStep(d.Certificate))
	}
	var errs []error
	for _, s := range steps {
		key := types.NamespacedName{Namespace: s.desired.GetNamespace(), Name: s.desired.GetName()}
		name := s.kind + "/" + key.Name
		err := c.Get(ctx, key, s.current)
		if meta.IsNoMatchError(err) {
			errs = append(errs, fmt.Errorf("%s: the API server does not serve the kind (%w); spec.tls.issuerRef needs cert-manager installed", name, err))
			continue
		}
		if apierrors.IsNotFound(err) {
			err = c.Create(ctx, s.desired)
			if err == nil {
				res.Created = append(res.Created, name)
				continue
			}
			if !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("creating %s: %w", name, err))
				continue
			}
			// The cache holds only objects with the operator's labels: the name is taken by
			// someone else's object, or by one of ours that lost its labels (then repaired
			// below, labels included), or by one just created that the cache has not seen.
			err = live.Get(ctx, key, s.current)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", name, err))
			continue
		}
		if !ours(s.desired, s.current) {
			errs = append(errs, notOurs(name))
			continue
		}
		if s.same(s.current) && labelsAndOwners(s.desired, s.current) {
			continue
		}
		s.merge(s.current)
		mergeMeta(s.desired, s.current)
		err = c.Update(ctx, s.current)
		if apierrors.IsConflict(err) {
			// The cache was behind the API server (our own write a moment ago, say): read the
			// object there and repair it once more, or find it repaired already.
			if err = live.Get(ctx, key, s.current); err == nil {
				if s.same(s.current) && labelsAndOwners(s.desired, s.current) {
					continue
				}
				s.merge(s.current)
				mergeMeta(s.desired, s.current)
				err = c.Update(ctx, s.current)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("repairing %s: %w", name, err))
			continue
		}
		res.Updated = append(res.Updated, name)
	}
	if !statefulSet {
		// Disabled: a budget left behind would still hold evictions back, a policy would still
		// filter, a Certificate would still be renewed for nobody.
		if d.PDB == nil && d.PDBName != "" {
			errs = append(errs, deleteOurs(ctx, c, d, &policyv1.PodDisruptionBudget{}, "PodDisruptionBudget", d.PDBName, &res))
		}
		if s := d.Sentinels; s != nil && s.PDB == nil {
			errs = append(errs, deleteOurs(ctx, c, d, &policyv1.PodDisruptionBudget{}, "PodDisruptionBudget", s.StatefulSet.Name, &res))
		}
		if d.NetworkPolicy == nil && d.Names.Policy != "" {
			errs = append(errs, deleteOurs(ctx, c, d, &networkingv1.NetworkPolicy{}, "NetworkPolicy", d.Names.Policy, &res))
		}
		if d.BusPolicy == nil && d.Names.BusPolicy != "" {
			errs = append(errs, deleteOurs(ctx, c, d, &networkingv1.NetworkPolicy{}, "NetworkPolicy", d.Names.BusPolicy, &res))
		}
		if d.Certificate == nil && d.Names.Certificate != "" {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(CertificateGVK)
			errs = append(errs, deleteOurs(ctx, c, d, u, "Certificate", d.Names.Certificate, &res))
		}
	}
	return res, errors.Join(errs...)
}

// deleteOurs deletes the named object when this cluster owns it (an object of a kind the API
// server does not serve, cert-manager's without cert-manager, is not there either).
func deleteOurs(ctx context.Context, c client.Client, d Desired, obj client.Object, kind, name string, res *Result) error {
	err := c.Get(ctx, types.NamespacedName{Namespace: d.StatefulSet.Namespace, Name: name}, obj)
	switch {
	case err == nil && ours(d.StatefulSet, obj):
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s/%s: %w", kind, name, err)
		}
		res.Deleted = append(res.Deleted, kind+"/"+name)
	case err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
		return fmt.Errorf("reading %s/%s: %w", kind, name, err)
	}
	return nil
}

// certificateStep keeps the cert-manager Certificate's spec as desired; cert-manager's own
// defaults in it are not drift.
func certificateStep(want *unstructured.Unstructured) step {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(want.GroupVersionKind())
	return step{"Certificate", want, cur, func(cur client.Object) bool {
		return equality.Semantic.DeepDerivative(want.Object["spec"], cur.(*unstructured.Unstructured).Object["spec"])
	}, func(cur client.Object) { cur.(*unstructured.Unstructured).Object["spec"] = want.Object["spec"] }}
}

// notOurs is the error for an object in the way.
func notOurs(name string) error {
	return fmt.Errorf("%s exists and is %w (no owner reference to it): rename the cluster or remove that object; the operator does not take over objects it did not create", name, ErrNotOurs)
}

// ownedBy reports whether cur has owner among its owners (same UID).
func ownedBy(owner metav1.OwnerReference, cur metav1.Object) bool {
	return ours(&metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{owner}}, cur)
}

// ours reports whether cur is owned by an owner desired names (same UID).
func ours(desired, cur metav1.Object) bool {
	for _, want := range desired.GetOwnerReferences() {
		for _, have := range cur.GetOwnerReferences() {
			if have.UID == want.UID && want.UID != "" {
				return true
			}
		}
	}
	return false
}

// step is one owned object: how to tell whether the current one is as desired, and how to
// bring it there.
type step struct {
	kind    string
	desired client.Object
	current client.Object
	same    func(cur client.Object) bool
	merge   func(cur client.Object)
}

func statefulSetStep(want *appsv1.StatefulSet) step { return setStep(want, false) }

// statefulSetKeepingCount is the step of a StatefulSet whose pod count is set elsewhere (the
// sentinels': by an EnsureObjects): one that exists keeps its count, a new one is made at
// want's.
func statefulSetKeepingCount(want *appsv1.StatefulSet) step { return setStep(want, true) }

func setStep(want *appsv1.StatefulSet, keepCount bool) step {
	return step{"StatefulSet", want, &appsv1.StatefulSet{}, func(cur client.Object) bool {
		s := cur.(*appsv1.StatefulSet)
		spec := want.Spec.DeepCopy()
		// Claim templates are immutable; storage grows by expanding the claims.
		spec.VolumeClaimTemplates = s.Spec.VolumeClaimTemplates
		withProbeDefaults(&spec.Template.Spec)
		if keepCount {
			spec.Replicas = s.Spec.Replicas
		}
		return equality.Semantic.DeepDerivative(*spec, s.Spec)
	}, func(cur client.Object) {
		s := cur.(*appsv1.StatefulSet)
		vct, count := s.Spec.VolumeClaimTemplates, s.Spec.Replicas
		s.Spec = *want.Spec.DeepCopy()
		s.Spec.VolumeClaimTemplates = vct
		if keepCount {
			s.Spec.Replicas = count
		}
	}}
}

// withProbeDefaults gives the probes the success threshold the API server stores when a
// template leaves it unset (1): DeepDerivative skips unset pointers, strings and slices, but
// compares numbers as they are, so an unset 0 read as drift and the StatefulSet was updated
// (and a Repaired Event sent) on every turn. The templates themselves stay as they are: the
// data pods' revision hashes theirs, and a change there would restart every pod.
func withProbeDefaults(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for _, p := range []*corev1.Probe{cs[i].LivenessProbe, cs[i].ReadinessProbe, cs[i].StartupProbe} {
				if p != nil && p.SuccessThreshold == 0 {
					p.SuccessThreshold = 1
				}
			}
		}
	}
}

func pdbStep(want *policyv1.PodDisruptionBudget) step {
	return step{"PodDisruptionBudget", want, &policyv1.PodDisruptionBudget{}, func(cur client.Object) bool {
		return equality.Semantic.DeepDerivative(want.Spec, cur.(*policyv1.PodDisruptionBudget).Spec)
	}, func(cur client.Object) { cur.(*policyv1.PodDisruptionBudget).Spec = want.Spec }}
}

func networkPolicyStep(want *networkingv1.NetworkPolicy) step {
	return step{"NetworkPolicy", want, &networkingv1.NetworkPolicy{}, func(cur client.Object) bool {
		return equality.Semantic.DeepEqual(want.Spec, cur.(*networkingv1.NetworkPolicy).Spec)
	}, func(cur client.Object) { cur.(*networkingv1.NetworkPolicy).Spec = want.Spec }}
}

func serviceStep(want *corev1.Service) step {
	return step{"Service", want, &corev1.Service{}, func(cur client.Object) bool {
		s := cur.(*corev1.Service)
		return equality.Semantic.DeepEqual(want.Spec.Selector, s.Spec.Selector) &&
			// Node ports are Kubernetes' to allocate: one the spec leaves 0 is not drift.
			equality.Semantic.DeepDerivative(keepNodePorts(want.Spec.Ports, s, serviceType(want.Spec.Type)), s.Spec.Ports) &&
			want.Spec.PublishNotReadyAddresses == s.Spec.PublishNotReadyAddresses &&
			serviceType(want.Spec.Type) == serviceType(s.Spec.Type) &&
			annotationsAsSpec(want, s)
	}, func(cur client.Object) {
		s := cur.(*corev1.Service)
		// A type changes in place: the ClusterIP, which Kubernetes keeps across a change
		// between ClusterIP, NodePort and LoadBalancer, is never touched here; the fields only
		// the old type had (node ports, traffic policies) the API server drops itself.
		s.Spec.Ports = keepNodePorts(want.Spec.Ports, s, serviceType(want.Spec.Type))
		s.Spec.Selector, s.Spec.PublishNotReadyAddresses = want.Spec.Selector, want.Spec.PublishNotReadyAddresses
		s.Spec.Type = serviceType(want.Spec.Type)
		mergeAnnotations(want, s)
	}}
}

// labelsAndOwners reports whether cur carries every label and owner reference desired sets.
func labelsAndOwners(desired, cur client.Object) bool {
	for k, v := range desired.GetLabels() {
		if cur.GetLabels()[k] != v {
			return false
		}
	}
	for _, want := range desired.GetOwnerReferences() {
		found := false
		for _, have := range cur.GetOwnerReferences() {
			found = found || have.UID == want.UID
		}
		if !found {
			return false
		}
	}
	return true
}

func mergeMeta(desired, cur client.Object) {
	labels := cur.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range desired.GetLabels() {
		labels[k] = v
	}
	cur.SetLabels(labels)
	refs := cur.GetOwnerReferences()
	for _, want := range desired.GetOwnerReferences() {
		found := false
		for _, have := range refs {
			found = found || have.UID == want.UID
		}
		if !found {
			refs = append(refs, want)
		}
	}
	cur.SetOwnerReferences(refs)
}
