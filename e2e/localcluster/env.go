package localcluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// containerEnv resolves a container's environment as kubelet does: envFrom first, then env
// in order (later entries may refer to earlier ones with $(NAME)), plus the variables every
// container gets. It returns the list for exec and a map for $(VAR) expansion.
func containerEnv(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, c *corev1.Container, podIP, hostIP, apiHost, apiPort string) ([]string, map[string]string, error) {
	env := map[string]string{
		"PATH":                    defaultPath,
		"HOSTNAME":                pod.Name,
		"KUBERNETES_SERVICE_HOST": apiHost,
		"KUBERNETES_SERVICE_PORT": apiPort,
		"KUBERNETES_PORT":         "tcp://" + apiHost + ":" + apiPort,
	}
	order := []string{"PATH", "HOSTNAME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_PORT"}
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				if isOptional(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, nil, fmt.Errorf("envFrom configMap %s: %w", from.ConfigMapRef.Name, err)
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil {
				if isOptional(from.SecretRef.Optional) {
					continue
				}
				return nil, nil, fmt.Errorf("envFrom secret %s: %w", from.SecretRef.Name, err)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(from.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, env))
			continue
		}
		v, ok, err := envValueFrom(ctx, cs, pod, c, e.ValueFrom, podIP, hostIP)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	list := make([]string, 0, len(order))
	for _, k := range order {
		list = append(list, k+"="+env[k])
	}
	return list, env, nil
}

func isOptional(b *bool) bool { return b != nil && *b }

func envValueFrom(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, c *corev1.Container, src *corev1.EnvVarSource, podIP, hostIP string) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := podField(pod, src.FieldRef.FieldPath, podIP, hostIP)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		return resourceField(c, src.ResourceFieldRef), true, nil
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", false, optionalErr(ref.Optional, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", false, optionalErr(ref.Optional, fmt.Errorf("configMap %s has no key %s", ref.Name, ref.Key))
		}
		return v, true, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", false, optionalErr(ref.Optional, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return "", false, optionalErr(ref.Optional, fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key))
		}
		return string(v), true, nil
	}
	return "", false, nil
}

func optionalErr(optional *bool, err error) error {
	if isOptional(optional) {
		return nil
	}
	return err
}

// podField answers the downward API's fieldRef paths.
func podField(pod *corev1.Pod, path, podIP, hostIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	case "metadata.labels", "metadata.annotations":
		m := pod.Labels
		if path == "metadata.annotations" {
			m = pod.Annotations
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		lines := make([]string, 0, len(keys))
		for _, k := range keys {
			lines = append(lines, k+"="+strconv.Quote(m[k]))
		}
		return strings.Join(lines, "\n"), nil
	}
	for _, p := range []string{"metadata.labels['", "metadata.annotations['"} {
		if strings.HasPrefix(path, p) && strings.HasSuffix(path, "']") {
			key := strings.TrimSuffix(strings.TrimPrefix(path, p), "']")
			if strings.HasPrefix(p, "metadata.labels") {
				return pod.Labels[key], nil
			}
			return pod.Annotations[key], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

func resourceField(c *corev1.Container, ref *corev1.ResourceFieldSelector) string {
	var list corev1.ResourceList
	name := ref.Resource
	switch {
	case strings.HasPrefix(name, "limits."):
		list, name = c.Resources.Limits, strings.TrimPrefix(name, "limits.")
	case strings.HasPrefix(name, "requests."):
		list, name = c.Resources.Requests, strings.TrimPrefix(name, "requests.")
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		// Kubelet reports the node's allocatable when no limit is set.
		alloc := nodeObject(&node{}).Status.Allocatable
		q = alloc[corev1.ResourceName(name)]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		if name == "cpu" {
			return strconv.FormatInt(q.MilliValue()/1000+boolToInt(q.MilliValue()%1000 != 0), 10)
		}
		return strconv.FormatInt(q.Value(), 10)
	}
	if name == "cpu" {
		return strconv.FormatInt((q.MilliValue()+divisor.MilliValue()-1)/divisor.MilliValue(), 10)
	}
	return strconv.FormatInt((q.Value()+divisor.Value()-1)/divisor.Value(), 10)
}

func boolToInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// expand replaces $(VAR) with the variable's value where it is defined, keeps unknown
// references as they are and turns $$ into $, as Kubernetes does for env, command and args.
func expand(s string, env map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
