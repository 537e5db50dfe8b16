// RUN: vortex-opt %s --split-input-file -verify-diagnostics

// Each rule of the typed manifest (lib/Dialect/ManifestAttrs.cpp), refused
// where the manifest is parsed.

// expected-error @+1 {{manifest version 1 is not the version this build writes (2)}}
module attributes {vortex.manifest = #vortex.manifest<version = 1, flow = "f", backend = "cuda", steps = {}>} {}

// -----

// expected-error @+1 {{a manifest needs the flow's name}}
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "", backend = "cuda", steps = {}>} {}

// -----

// expected-error @+1 {{backend must be "cpu" or "cuda", got "rocm"}}
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "rocm", steps = {}>} {}

// -----

// expected-error @+1 {{symbol 'rows' must name the tensor that binds it}}
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", symbols = {rows = 3}, steps = {}>} {}

// -----

// expected-error @+1 {{tensor 'q' must be a #vortex.tensor}}
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", tensors = {q = {role = "input"}}, steps = {}>} {}

// -----

// expected-error @+1 {{unknown step 'prefill' (indexer, cache or attend)}}
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", steps = {prefill = #vortex.step<args = [], writes = [], launches = []>}>} {}

// -----

// expected-error @+1 {{step 'indexer' must be a #vortex.step}}
module attributes {vortex.manifest = #vortex.manifest<version = 2, flow = "f", backend = "cuda", steps = {indexer = {args = []}}>} {}

// -----

// expected-error @+1 {{launches[0] must be a #vortex.launch, got {kernel = "k0"}}}
module attributes {x = #vortex.step<args = [], writes = [], launches = [{kernel = "k0"}]>} {}

// -----

// expected-error @+1 {{args[1] must be a tensor name, got 3}}
module attributes {x = #vortex.step<args = ["q", 3], writes = [], launches = []>} {}

// -----

// expected-error @+1 {{a launch needs a kernel name}}
module attributes {x = #vortex.launch<kernel = "", grid = rows, threads = 1, params = []>} {}

// -----

// expected-error @+1 {{launch of 'k': threads must be >= 1 and shared_bytes >= 0}}
module attributes {x = #vortex.launch<kernel = "k", grid = rows, threads = 0, params = []>} {}

// -----

// expected-error @+1 {{launch of 'k': ctas_per_sm >= 1 goes with (and only with) a persistent grid}}
module attributes {x = #vortex.launch<kernel = "k", grid = persistent, threads = 1, params = []>} {}

// -----

// expected-error @+1 {{launch of 'k': ctas_per_sm >= 1 goes with (and only with) a persistent grid}}
module attributes {x = #vortex.launch<kernel = "k", grid = rows, ctas_per_sm = 2, threads = 1, params = []>} {}

// -----

// expected-error @+1 {{launch of 'k': items_of and per_cta >= 1 go with (and only with) an items grid}}
module attributes {x = #vortex.launch<kernel = "k", grid = items, items_of = "q", threads = 1, params = []>} {}

// -----

// expected-error @+1 {{params[0] must be a #vortex.launch_param, got "q"}}
module attributes {x = #vortex.launch<kernel = "k", grid = rows, threads = 1, params = ["q"]>} {}

// -----

// expected-error @+1 {{reads[0] must be a tensor name, got 1}}
module attributes {x = #vortex.launch<kernel = "k", grid = rows, threads = 1, params = [], reads = [1]>} {}

// -----

// expected-error @+1 {{launch of 'k': an empty choice}}
module attributes {x = #vortex.launch<kernel = "k", grid = rows, threads = 1, params = [], choice = "">} {}

// -----

// expected-error @+1 {{launch of 'k': grid_z must be in [1, 65535], got 0}}
module attributes {x = #vortex.launch<kernel = "k", grid = row_splits, threads = 1, params = [], grid_z = 0>} {}

// -----

// expected-error @+1 {{a launch parameter needs a name}}
module attributes {x = #vortex.launch_param<name = "", kind = buffer>} {}

// -----

// expected-error @+1 {{buffer parameter 'q' takes no dtype or value: the tensor has one}}
module attributes {x = #vortex.launch_param<name = "q", kind = buffer, value = 3>} {}

// -----

// expected-error @+1 {{scalar parameter 'rows' must be i32 or i64, got 'f32'}}
module attributes {x = #vortex.launch_param<name = "rows", kind = scalar, dtype = f32>} {}

// -----

// expected-error @+1 {{shape[1] must be a size >= 0 or a symbol, got -1}}
module attributes {x = #vortex.tensor<role = input, dtype = i32, shape = ["rows", -1]>} {}

// -----

// expected-error @+1 {{only the status tensor lists flags}}
module attributes {x = #vortex.tensor<role = input, dtype = i32, shape = [4], flags = {a = 1}>} {}

// -----

// expected-error @+1 {{flag 'a' must be an integer}}
module attributes {x = #vortex.tensor<role = status, dtype = i32, shape = [4], flags = {a = "x"}>} {}

// -----

// A role, grid or kind outside its enum is a parse error at the keyword.
// expected-error @+2 {{expected one of [input, cache, output, scratch, parameter, status] for what a tensor of the flow ABI is to its caller, got: weights}}
// expected-error @+1 {{failed to parse Vortex_TensorAttr parameter 'role'}}
module attributes {x = #vortex.tensor<role = weights, dtype = i32, shape = [4]>} {}
