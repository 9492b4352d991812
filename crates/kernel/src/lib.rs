//! schedlab-kernel
