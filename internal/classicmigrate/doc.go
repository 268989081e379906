// Package classicmigrate decides the steps of a classic slot move, the
// valkey-cli --cluster reshard way (SETSLOT and MIGRATE), for clusters
// where some node runs a Valkey without CLUSTER MIGRATESLOTS: from what
// the two nodes report, which slots of a batch still have to be marked
// IMPORTING and MIGRATING, and how one round of keys is grouped into
// MIGRATE calls. It sends nothing; internal/controller runs the move.
package classicmigrate
