package render

// Ports of a Valkey node. In TLS mode the client port carries TLS only
// (port 0, tls-port 6379), so clients and the Service keep one number.
const (
	PortValkey     int32 = 6379
	PortBus        int32 = 16379
	portNameValkey       = "valkey"
	portNameBus          = "valkey-bus"
)

// The metrics exporter's port: redis_exporter's usual 9121, named so a
// PodMonitor selects it by name.
const (
	PortExporter     int32 = 9121
	PortNameExporter       = "metrics"
)
