//! schedlab-engine
