package admission

import (
	"context"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// checkSecrets returns what is wrong with the Secrets of uses, in namespace ns, for user:
// first whether the user may get each of them, then, only for those the user may read,
// whether each exists with its keys. The order matters: the operator reads these Secrets
// with its own rights, so without the first check a user who may create ValkeyClusters could
// have the operator use (and mount into pods) a Secret the user cannot read; and telling a
// user that a Secret they may not read lacks a key would tell them what it holds.
func (v *validator) checkSecrets(ctx context.Context, user authenticationv1.UserInfo, ns string, uses []secretUse) ([]string, error) {
	var problems []string
	allowed := map[string]bool{}
	for _, u := range uses {
		ok, seen := allowed[u.name]
		if !seen {
			var err error
			if ok, err = v.mayGetSecret(ctx, user, ns, u.name); err != nil {
				return nil, err
			}
			allowed[u.name] = ok
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("%s names Secret %s/%s, which you (%s) may not get: the operator would read it for you; ask for get on it, or name a Secret you may read",
				u.field, ns, u.name, user.Username))
		}
	}
	for _, u := range uses {
		if !allowed[u.name] {
			continue
		}
		var s corev1.Secret
		err := v.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: u.name}, &s)
		if apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("%s names Secret %s/%s, which does not exist: create it with the key%s %s first, or fix the name",
				u.field, ns, u.name, plural(len(u.keys)), strings.Join(u.keys, ", ")))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading Secret %s/%s (%s): %w", ns, u.name, u.field, err)
		}
		var missing []string
		for _, k := range u.keys {
			if _, ok := s.Data[k]; !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("Secret %s/%s, which %s names, has no key %s: add %s, or %s",
				ns, u.name, u.field, strings.Join(missing, ", "), itOrThem(len(missing)), u.fix))
		}
	}
	return problems, nil
}

// mayGetSecret asks the API server whether user may get the Secret ns/name, as the API server
// would answer the user's own request.
func (v *validator) mayGetSecret(ctx context.Context, user authenticationv1.UserInfo, ns, name string) (bool, error) {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: name},
	}}
	if len(user.Extra) > 0 {
		review.Spec.Extra = map[string]authorizationv1.ExtraValue{}
		for k, val := range user.Extra {
			review.Spec.Extra[k] = authorizationv1.ExtraValue(val)
		}
	}
	answer, err := v.reviews.Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking the API server whether %s may get Secret %s/%s: %w", user.Username, ns, name, err)
	}
	return answer.Status.Allowed, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func itOrThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
