package localcluster

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// auditPolicy records every request of a ServiceAccount at the Metadata level (who, verb,
// resource, answer; never a body, so no Secret's data lands in the log). The operators under
// test run as ServiceAccounts; the log is how a test proves which verbs they use, and that
// none was refused, without asking the operator's own code.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
`

// writeAuditPolicy writes the policy into dir and returns the flags that turn auditing on,
// logging to dir/audit.log.
func writeAuditPolicy(dir string) (policy, log string, err error) {
	policy = filepath.Join(dir, "audit-policy.yaml")
	log = filepath.Join(dir, "audit.log")
	return policy, log, os.WriteFile(policy, []byte(auditPolicy), 0o600)
}

// AuditEvent is one request as the API server's audit log recorded it (the fields tests use).
type AuditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Annotations map[string]string `json:"annotations"`
}

// Forbidden is whether the authorizer (RBAC) refused the request: not every 403 is RBAC's
// (a create in a namespace being deleted is refused with 403 too).
func (e AuditEvent) Forbidden() bool {
	return e.Annotations["authorization.k8s.io/decision"] == "forbid"
}

// Resource is group/resource[/subresource] of the request ("" for a non-resource URL).
func (e AuditEvent) Resource() string {
	if e.ObjectRef == nil {
		return ""
	}
	r := e.ObjectRef.APIGroup + "/" + e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	return r
}

// Code is the HTTP status of the answer (0 when the request has not been answered).
func (e AuditEvent) Code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// AuditEvents reads the API server's audit log: every request made so far by a
// ServiceAccount whose user name starts with userPrefix ("" for all of them).
func (c *Cluster) AuditEvents(userPrefix string) ([]AuditEvent, error) {
	f, err := os.Open(c.cp.auditLog)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// The API server may be writing the last line right now.
			continue
		}
		if strings.HasPrefix(e.User.Username, userPrefix) {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}
