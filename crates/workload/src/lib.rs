//! schedlab-workload
