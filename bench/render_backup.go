package main

import (
	"fmt"
	"strings"

	"github.com/gomomento/valkey-operator/bench/record"
)

func renderBackup(w *strings.Builder, r Report) {
	if len(r.Records.Backup) == 0 {
		return
	}
	section(w, "Backup and restore",
		"A backup and a restore ([backup.md](backup.md)) of the same data against their limits,",
		"measured in the same run on this machine: the object store's own upload and download of",
		"the file with a plain client (minio-go), and a plain `valkey-server` producing the same",
		"data's file (`valkey-cli --rdb`) and loading it. Throughput is the file's size over the",
		"time the ValkeyBackup's and the restore's status record from start to end.")
	tableHead(w, "llrrrrrrr", "Valkey", "data", "backup", "store upload", "`valkey-cli --rdb`", "restore", "store download", "plain load", "SET p99 during / without a backup")
	for _, x := range r.Records.Backup {
		fmt.Fprintf(w, "| %s | %s (%d keys) | %.1f MB/s | %.1f MB/s | %.1f MB/s | %.1f MB/s | %.1f MB/s | %.1f MB/s | %.2f / %.2f ms |\n",
			x.Version, mebibytes(x.Bytes), x.Keys, x.BackupMBps(), record.MBps(x.Bytes, x.StoreUploadSeconds), record.MBps(x.Bytes, x.PlainRDBSeconds),
			x.RestoreMBps(), record.MBps(x.Bytes, x.StoreDownloadSeconds), record.MBps(x.Bytes, x.PlainLoadSeconds), x.P99DuringMs, x.P99IdleMs)
	}
	w.WriteString("\nThe backup streams from the replica, so the primary serving the writes does not fork; a\n" +
		"restore loads each shard's file into a scratch server and copies its keys with `DUMP` and\n" +
		"`RESTORE`, so it is bound by key count as much as by bytes.\n\n")
}
