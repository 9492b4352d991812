//! schedlab-machine
