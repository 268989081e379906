// Package reload holds the controllers that push changed Secrets to running
// nodes without restarting them: the TLS reloader (certificates, and the
// verified-leaf pins) and the ACL reloader (users and passwords).
package reload
