// Package backups is the ValkeyBackup controller and the backup schedule's: a backup streams
// each shard's snapshot from a replica in sync to the store, in the operator itself; the
// schedule creates ValkeyBackups at the times of spec.backup.schedule and prunes those
// beyond spec.backup.retention. A backup is not one of the machine's actions: it changes
// nothing on the nodes. It reads which nodes to stream from the cluster controller's last
// look (the Clusters interface), and never imports that controller.
package backups
