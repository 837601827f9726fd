package v1beta1

// SecretKeyRef names one key of a Secret in the resource's namespace: the one shape in which
// this API names a Secret whose key is the user's choice (auth.passwordSecretRef, a
// ValkeyACL's passwordSecretRefs).
type SecretKeyRef struct {
	// Name is the name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Key is the key within the Secret whose value is the password.
	// +kubebuilder:default=password
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	Key string `json:"key,omitempty"`
}

// SecretRef names a Secret in the resource's namespace whose keys are fixed by what it holds
// (tls.crt, tls.key and ca.crt of a TLS Secret; AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
// of store credentials): SecretKeyRef without the key, which would have nothing to choose.
type SecretRef struct {
	// Name is the name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}
