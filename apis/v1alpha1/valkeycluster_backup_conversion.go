package v1alpha1

import (
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// storeToHub: the credentials Secret's name becomes credentialsSecretRef; none (which
// v1alpha1 refuses) is v1beta1's default credential chain.
func storeToHub(in BackupStore) v1beta1.BackupStore {
	out := v1beta1.BackupStore{
		Bucket: in.Bucket, Prefix: in.Prefix, Endpoint: in.Endpoint, AllowPlainHTTP: in.AllowPlainHTTP,
		Region: in.Region, ForcePathStyle: in.ForcePathStyle, Encryption: in.Encryption,
		KMSKeyID: in.KMSKeyID, Checksums: in.Checksums,
	}
	if in.CredentialsSecret != "" {
		out.CredentialsSecretRef = &v1beta1.SecretRef{Name: in.CredentialsSecret}
	}
	return out
}

// storeFromHub is storeToHub's inverse. A store on the default credential chain reads as
// credentialsSecret "" in v1alpha1, whose schema requires a name: a v1alpha1 client can read
// such a store but not write it back unchanged.
func storeFromHub(in v1beta1.BackupStore) BackupStore {
	out := BackupStore{
		Bucket: in.Bucket, Prefix: in.Prefix, Endpoint: in.Endpoint, AllowPlainHTTP: in.AllowPlainHTTP,
		Region: in.Region, ForcePathStyle: in.ForcePathStyle, Encryption: in.Encryption,
		KMSKeyID: in.KMSKeyID, Checksums: in.Checksums,
	}
	if in.CredentialsSecretRef != nil {
		out.CredentialsSecret = in.CredentialsSecretRef.Name
	}
	return out
}

func storePtrToHub(in *BackupStore) *v1beta1.BackupStore {
	if in == nil {
		return nil
	}
	out := storeToHub(*in)
	return &out
}

func storePtrFromHub(in *v1beta1.BackupStore) *BackupStore {
	if in == nil {
		return nil
	}
	out := storeFromHub(*in)
	return &out
}

func backupSpecToHub(in *BackupSpec) *v1beta1.BackupSpec {
	if in == nil {
		return nil
	}
	return &v1beta1.BackupSpec{
		Store: storeToHub(in.Store), Schedule: in.Schedule, Suspend: in.Suspend,
		Retention: v1beta1.BackupRetention(in.Retention),
	}
}

func backupSpecFromHub(in *v1beta1.BackupSpec) *BackupSpec {
	if in == nil {
		return nil
	}
	return &BackupSpec{
		Store: storeFromHub(in.Store), Schedule: in.Schedule, Suspend: in.Suspend,
		Retention: BackupRetention(in.Retention),
	}
}

// restoreSourceToHub leaves discardCurrentData false: v1alpha1 has no such intent (it
// restores into a running cluster without one), and the caller restores a recorded one.
func restoreSourceToHub(in *RestoreSource) *v1beta1.RestoreSource {
	if in == nil {
		return nil
	}
	return &v1beta1.RestoreSource{Backup: in.Backup, Store: storePtrToHub(in.Store), Path: in.Path}
}

func restoreSourceFromHub(in *v1beta1.RestoreSource) *RestoreSource {
	if in == nil {
		return nil
	}
	return &RestoreSource{Backup: in.Backup, Store: storePtrFromHub(in.Store), Path: in.Path}
}
