//! cpu
vortex.flow @broken config = #vortex.config<block_size = 16
