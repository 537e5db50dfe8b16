//===- vortex-fuzz.cpp - Fuzz target: parse, verify and lower vortex IR ---===//
//
// One input is MLIR text, optionally led by a line that picks what runs after
// parsing and verifying it:
//
//   //! gpu threads=128 items-per-iteration=4
//   //! config topk-val=64 group-size=5 | cpu
//   <MLIR>
//
// Stages (at most 6, separated by `|`, run as one pass pipeline):
//   verify   nothing more: print the module (custom and generic form) and
//            parse the generic form again (the default, also for an input
//            without a `//!` line or with no stage this file knows)
//   cpu      vortex-to-cpu
//   fuse     vortex-fuse
//   pad      vortex-pad, vortex-mask-padding
//   gpu      convert-vortex-to-gpu     threads= ctas-per-sm= items-per-iteration=
//   config   vortex-set-config         group-size= topk-val= topk-ratio=
//                                      reserved-bos= reserved-eos=
//   nvvm     vortex-nvvm-stage-lower   chip=   (kernels to the NVVM dialect,
//            in process: no gpu-module-to-binary, no ptxas, no libdevice)
// Option values are passed on as written (numbers only; chip: [a-z0-9_]),
// so the fuzzer reaches the extremes; unknown keys and malformed values are
// dropped. Diagnostics are swallowed (VORTEX_FUZZ_VERBOSE=1 prints the
// first few, truncated). Everything runs in a fresh single-threaded
// MLIRContext per input.
//
// Built two ways (tools/vortex-fuzz/CMakeLists.txt):
//   - with libFuzzer (VORTEX_ENABLE_FUZZER, clang): LLVMFuzzerTestOneInput;
//     `vortex-fuzz DIR...` fuzzes, `vortex-fuzz FILE...` replays;
//   - without (any compiler, e.g. the GCC build or a GCC ASan build): a
//     replay driver, `vortex-fuzz [-v] FILE|DIR...`, that runs each input
//     once and exits 0 unless one crashes.
// scripts/fuzz.sh drives it; docs/fuzzing.md describes the whole setup.
//
//===----------------------------------------------------------------------===//

#include "Vortex/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

using namespace mlir;
using llvm::StringRef;

namespace {

/// Inputs above this size are not run (scripts/fuzz.sh passes a smaller
/// -max_len; this bounds replayed files).
constexpr size_t kMaxInputSize = 64 * 1024;
constexpr unsigned kMaxStages = 6;
constexpr unsigned kMaxPrintedDiagnostics = 8;
constexpr size_t kMaxDiagnosticChars = 400;

bool verbose() {
  static const bool value = [] {
    const char *v = std::getenv("VORTEX_FUZZ_VERBOSE");
    return v && *v && StringRef(v) != "0";
  }();
  return value;
}

/// VORTEX_FUZZ_ROUNDTRIP=1: abort when the generic form printed in the
/// `verify` stage does not parse again (off by default: a round-trip oracle,
/// not a crash).
bool strictRoundTrip() {
  static const bool value = [] {
    const char *v = std::getenv("VORTEX_FUZZ_ROUNDTRIP");
    return v && *v && StringRef(v) != "0";
  }();
  return value;
}

/// VORTEX_FUZZ_DUMP=1: print the module a pipeline produced (at most
/// 200 KB; for replaying one input by hand).
bool dumpResult() {
  static const bool value = [] {
    const char *v = std::getenv("VORTEX_FUZZ_DUMP");
    return v && *v && StringRef(v) != "0";
  }();
  return value;
}

/// MLIR 22.1.8's parser crashes (SIGSEGV in a release libMLIR.so, an
/// assertion in a debug one) on a dense array attribute of `index`:
/// `array<index: 1>`, `array<index>`. DenseArrayElementParser asks the
/// element type for a bit width, which index has not. Upstream bug
/// llvm/llvm-project#179045, fixed for LLVM 23 by llvm/llvm-project#179075
/// (the parser now reports "index is not a valid element type"); Debian's
/// 22.1.8 has not got the fix, and stock mlir-opt crashes identically. Not a
/// vortex bug, so the target skips such inputs (and `array<!alias`, since an
/// alias may name index) instead of reporting them forever. Remove this when
/// the project moves to an MLIR with the fix.
bool hitsUpstreamDenseArrayIndexBug(StringRef text) {
  const char *ws = " \t\r\n";
  for (size_t pos = text.find("array"); pos != StringRef::npos;
       pos = text.find("array", pos + 1)) {
    StringRef rest = text.drop_front(pos + 5).ltrim(ws);
    if (!rest.consume_front("<"))
      continue;
    rest = rest.ltrim(ws);
    if (rest.starts_with("index") || rest.starts_with("!"))
      return true;
  }
  return false;
}

bool isNumber(StringRef value) {
  if (value.empty() || value.size() > 40)
    return false;
  return llvm::all_of(value, [](char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' ||
           c == 'e' || c == 'E';
  });
}

bool isChip(StringRef value) {
  if (value.empty() || value.size() > 16)
    return false;
  return llvm::all_of(value, [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_';
  });
}

struct StageKind {
  StringRef name;     // as written in the `//!` line
  StringRef pipeline; // the pass pipeline element(s)
  // Options passed on to the last pass of `pipeline`, and their check.
  llvm::ArrayRef<StringRef> keys;
  bool (*valid)(StringRef);
};

const StringRef kGPUKeys[] = {"threads", "ctas-per-sm", "items-per-iteration"};
const StringRef kConfigKeys[] = {"group-size", "topk-val", "topk-ratio",
                                 "reserved-bos", "reserved-eos"};
const StringRef kNVVMKeys[] = {"chip"};

const StageKind kStages[] = {
    {"cpu", "vortex-to-cpu", {}, nullptr},
    {"fuse", "vortex-fuse", {}, nullptr},
    {"pad", "vortex-pad,vortex-mask-padding", {}, nullptr},
    {"gpu", "convert-vortex-to-gpu", kGPUKeys, isNumber},
    {"config", "vortex-set-config", kConfigKeys, isNumber},
    {"nvvm", "vortex-nvvm-stage-lower", kNVVMKeys, isChip},
};

/// The pass pipeline the `//!` line asks for ("" for `verify`).
std::string pipelineFromHeader(StringRef text) {
  if (!text.starts_with("//!"))
    return "";
  StringRef line = text.drop_front(3).split('\n').first;
  SmallVector<StringRef> stages;
  line.split(stages, '|', kMaxStages, /*KeepEmpty=*/false);
  std::string pipeline;
  unsigned count = 0;
  for (StringRef stage : stages) {
    if (count == kMaxStages)
      break;
    SmallVector<StringRef> words;
    stage.split(words, ' ', -1, /*KeepEmpty=*/false);
    if (words.empty())
      continue;
    const StageKind *kind = llvm::find_if(
        kStages, [&](const StageKind &k) { return k.name == words[0].trim(); });
    if (kind == std::end(kStages))
      continue;
    std::string options;
    for (StringRef word : llvm::drop_begin(words)) {
      auto [key, value] = word.trim().split('=');
      if (!llvm::is_contained(kind->keys, key) || !kind->valid(value))
        continue;
      options += (options.empty() ? "" : " ") + key.str() + "=" + value.str();
    }
    if (!pipeline.empty())
      pipeline += ",";
    pipeline += kind->pipeline.str();
    if (!options.empty())
      pipeline += "{" + options + "}";
    ++count;
  }
  return pipeline;
}

const DialectRegistry &getRegistry() {
  static const DialectRegistry *registry = [] {
    // The dialects and passes vortex-opt has, vortex's through
    // lib/Registration.
    auto *r = new DialectRegistry();
    registerAllDialects(*r);
    registerAllExtensions(*r);
    registerAllGPUToLLVMIRTranslations(*r);
    vortex::registerAllVortexDialects(*r);
    vortex::registerAllVortexPasses();
    return r;
  }();
  return *registry;
}

OwningOpRef<ModuleOp> parse(StringRef text, MLIRContext &context) {
  // A copy with the terminating NUL the lexer relies on.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz-input"), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
}

void roundTrip(ModuleOp module, MLIRContext &context) {
  std::string custom, generic;
  {
    llvm::raw_string_ostream os(custom);
    module->print(os);
  }
  {
    llvm::raw_string_ostream os(generic);
    module->print(os, OpPrintingFlags().printGenericOpForm());
  }
  OwningOpRef<ModuleOp> again = parse(generic, context);
  if (!again && strictRoundTrip()) {
    llvm::errs() << "vortex-fuzz: the generic form of a verified module does "
                    "not parse again:\n"
                 << StringRef(generic).take_front(4000) << "\n";
    std::abort();
  }
}

struct Stats {
  unsigned inputs = 0, skipped = 0, parsed = 0, pipelines = 0, succeeded = 0;
};
Stats stats;

} // namespace

/// Runs one input. Returns -1 for an input that should not enter the corpus
/// (too large, or one that hits the upstream parser bug above).
static int runOne(const uint8_t *data, size_t size) {
  ++stats.inputs;
  if (size > kMaxInputSize) {
    ++stats.skipped;
    return -1;
  }
  StringRef text(reinterpret_cast<const char *>(data), size);
  if (hitsUpstreamDenseArrayIndexBug(text)) {
    ++stats.skipped;
    if (verbose())
      llvm::errs() << "vortex-fuzz: skipped (array<index...>: upstream "
                      "llvm/llvm-project#179045)\n";
    return -1;
  }
  std::string pipeline = pipelineFromHeader(text);

  MLIRContext context(getRegistry(), MLIRContext::Threading::DISABLED);
  unsigned diagnostics = 0;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (verbose() && diagnostics < kMaxPrintedDiagnostics) {
      std::string message = diag.str();
      if (message.size() > kMaxDiagnosticChars)
        message = message.substr(0, kMaxDiagnosticChars) + " ...";
      llvm::errs() << "vortex-fuzz: diagnostic: " << message << "\n";
    }
    ++diagnostics;
    return success();
  });

  OwningOpRef<ModuleOp> module = parse(text, context);
  if (!module)
    return 0;
  ++stats.parsed;
  if (failed(verify(*module)))
    return 0;
  if (pipeline.empty()) {
    roundTrip(*module, context);
    return 0;
  }

  ++stats.pipelines;
  PassManager pm(&context, ModuleOp::getOperationName());
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  // The elements alone: `pm` is anchored on builtin.module already, and a
  // `builtin.module(...)` around them would nest them one module deeper,
  // where they would run on nothing.
  if (failed(parsePassPipeline(pipeline, pm, errorStream))) {
    if (verbose())
      llvm::errs() << "vortex-fuzz: bad pipeline '" << pipeline
                   << "': " << StringRef(errors).take_front(400) << "\n";
    return 0;
  }
  if (verbose()) {
    llvm::errs() << "vortex-fuzz: running builtin.module(" << pipeline
                 << ")\nvortex-fuzz: passes: ";
    pm.printAsTextualPipeline(llvm::errs());
    llvm::errs() << "\n";
  }
  bool ok = succeeded(pm.run(*module));
  stats.succeeded += ok;
  if (verbose())
    llvm::errs() << "vortex-fuzz: pipeline " << (ok ? "succeeded" : "failed")
                 << " (" << diagnostics << " diagnostics)\n";
  if (ok && dumpResult()) {
    std::string out;
    llvm::raw_string_ostream os(out);
    module->print(os);
    llvm::errs() << StringRef(out).take_front(200000) << "\n";
  }
  return 0;
}

#ifdef VORTEX_FUZZ_LIBFUZZER

#include "llvm/Support/FileSystem.h"

#include <random>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

// Values at the edges of what configs, shapes and options hold: products and
// sums of these overflow int64 (2^62, 2^63 - 1), int32 or unsigned, or are
// zero, negative or one off a power of two.
const char *const kEdgeNumbers[] = {
    "0", "-1", "1", "2", "3", "-2", "31", "32", "33", "63", "64", "65",
    "127", "128", "129", "255", "256", "257", "1023", "1024", "1025",
    "4095", "4096", "4097", "65535", "65536", "2147483647", "2147483648",
    "-2147483648", "-2147483649", "4294967295", "4294967296",
    "1152921504606846976", "4611686018427387904", "9223372036854775807",
    "-9223372036854775808", "9223372036854775806", "18446744073709551615",
    "0.0", "-0.5", "0.5", "1.0", "1.5", "1.0e+300", "-1.0e+300", "1.0e-300"};

template <typename T> const T &pick(std::mt19937_64 &rng, llvm::ArrayRef<T> from) {
  return from[rng() % from.size()];
}

std::string randomNumber(std::mt19937_64 &rng, StringRef old) {
  switch (rng() % 5) {
  case 0:
  case 1:
    return pick<const char *>(rng, kEdgeNumbers);
  case 2:
    return std::to_string(rng() % 20);
  case 3:
    return std::to_string(rng() % 300);
  default: {
    // A neighbour of the old value: x+1, x-1, 2x, x/2 (wrapping: the
    // mutator itself must not overflow).
    long long value = 0;
    if (old.getAsInteger(10, value))
      return std::to_string(rng() % 64);
    uint64_t bits = static_cast<uint64_t>(value);
    switch (rng() % 4) {
    case 0:
      return std::to_string(static_cast<long long>(bits + 1));
    case 1:
      return std::to_string(static_cast<long long>(bits - 1));
    case 2:
      return std::to_string(static_cast<long long>(bits << 1));
    default:
      return std::to_string(value / 2);
    }
  }
  }
}

/// A new `//!` line: one to three stages with random options.
std::string randomStageLine(std::mt19937_64 &rng) {
  std::string line = "//!";
  unsigned stages = 1 + rng() % 3;
  for (unsigned i = 0; i < stages; ++i) {
    const StageKind &kind = pick<StageKind>(rng, kStages);
    line += (i ? " | " : " ") + kind.name.str();
    for (StringRef key : kind.keys) {
      if (rng() % 2)
        continue;
      std::string value =
          key == "chip" ? pick<const char *>(rng, {"sm_80", "sm_90", "sm_90a",
                                                   "sm_100", "sm_75", "sm_50"})
                        : randomNumber(rng, "");
      line += " " + key.str() + "=" + value;
    }
  }
  return line;
}

/// The numbers of `text` (maximal digit runs with their sign, not the digits
/// of an identifier such as %arg0, bf16, sm_90 or the 128 of ?x128), as
/// (offset, length); those in a `#vortex.config<...>` or on the `//!` line
/// in `knobs`.
void findNumbers(StringRef text,
                 SmallVectorImpl<std::pair<size_t, size_t>> &numbers,
                 SmallVectorImpl<std::pair<size_t, size_t>> &knobs) {
  size_t headerEnd = text.starts_with("//!") ? text.find('\n') : 0;
  SmallVector<std::pair<size_t, size_t>> configs;
  for (size_t at = text.find("#vortex.config<"); at != StringRef::npos;
       at = text.find("#vortex.config<", at + 1))
    configs.push_back({at, text.find('>', at)});
  for (size_t i = 0; i < text.size();) {
    if (!llvm::isDigit(text[i])) {
      ++i;
      continue;
    }
    size_t begin = i;
    while (i < text.size() && (llvm::isDigit(text[i]) || text[i] == '.'))
      ++i;
    if (begin > 0 && (llvm::isAlpha(text[begin - 1]) ||
                      text[begin - 1] == '_' || text[begin - 1] == '%'))
      continue;
    if (begin > 0 && text[begin - 1] == '-')
      --begin;
    numbers.push_back({begin, i - begin});
    bool knob = begin < headerEnd ||
                llvm::any_of(configs, [&](auto range) {
                  return begin > range.first && begin < range.second;
                });
    if (knob)
      knobs.push_back({begin, i - begin});
  }
}

/// Replaces one number of `text`, a config value or stage option half of the
/// time when there is one.
bool mutateNumber(std::mt19937_64 &rng, std::string &text) {
  SmallVector<std::pair<size_t, size_t>> numbers, knobs;
  findNumbers(text, numbers, knobs);
  if (numbers.empty())
    return false;
  auto [begin, length] = !knobs.empty() && rng() % 2
                             ? knobs[rng() % knobs.size()]
                             : numbers[rng() % numbers.size()];
  text.replace(begin, length,
               randomNumber(rng, StringRef(text).substr(begin, length)));
  return true;
}

StringRef withoutStageLine(StringRef text) {
  return text.starts_with("//!") ? text.split('\n').second : text;
}

/// The seeds that parse and verify (from $VORTEX_FUZZ_SEED_DIR, which
/// scripts/fuzz.sh sets to the generated seed corpus), without their `//!`
/// lines: the bodies the mutator restarts from.
std::vector<std::string> validBodies;

void loadValidBodies() {
  const char *dir = std::getenv("VORTEX_FUZZ_SEED_DIR");
  if (!dir || !*dir)
    return;
  std::error_code ec;
  llvm::StringSet<> seen;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    auto buffer = llvm::MemoryBuffer::getFile(it->path());
    if (!buffer)
      continue;
    StringRef body = withoutStageLine((*buffer)->getBuffer());
    if (!body.contains("vortex.") || body.size() > kMaxInputSize ||
        hitsUpstreamDenseArrayIndexBug(body) || !seen.insert(body).second)
      continue;
    MLIRContext context(getRegistry(), MLIRContext::Threading::DISABLED);
    ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) {
      return success();
    });
    if (parse(body, context))
      validBodies.push_back(body.str());
  }
  llvm::errs() << "vortex-fuzz: " << validBodies.size()
               << " valid seed bodies from " << dir << "\n";
}

size_t store(const std::string &text, uint8_t *data, size_t maxSize) {
  if (text.size() > maxSize)
    return 0;
  std::copy(text.begin(), text.end(), data);
  return text.size();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  (void)getRegistry();
  loadValidBodies();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return runOne(data, size);
}

/// Structure-aware mutations next to libFuzzer's byte-level ones. Mutated
/// text rarely still parses, and the corpus fills with parser paths, so
/// three times in eight the mutator works on valid IR instead:
///   1/8  a valid seed body with one to three numbers changed (a config
///        value or stage option half of the time) under a new `//!` line;
///   1/8  a new `//!` line over the input's body;
///   1/8  one number of the input changed (as above);
/// and the other 5/8 libFuzzer's own mutations (including crossover).
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  std::mt19937_64 rng(seed);
  unsigned choice = rng() % 8;
  std::string text(reinterpret_cast<const char *>(data), size);
  switch (choice) {
  case 0:
    if (validBodies.empty())
      break;
    text = randomStageLine(rng) + "\n" +
           validBodies[rng() % validBodies.size()];
    for (unsigned i = 0, n = 1 + rng() % 3; i < n; ++i)
      (void)mutateNumber(rng, text);
    if (size_t n = store(text, data, maxSize))
      return n;
    break;
  case 1:
    if (size_t n = store(randomStageLine(rng) + "\n" +
                             withoutStageLine(text).str(),
                         data, maxSize))
      return n;
    break;
  case 2:
    if (mutateNumber(rng, text))
      if (size_t n = store(text, data, maxSize))
        return n;
    break;
  default:
    break;
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}

#else // The replay driver.

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"

#include <vector>

static int replayFile(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false,
                                                   /*RequiresNullTerminator=*/false);
  if (!buffer) {
    llvm::errs() << "vortex-fuzz: cannot read " << path << ": "
                 << buffer.getError().message() << "\n";
    return 1;
  }
  if (verbose())
    llvm::errs() << "vortex-fuzz: " << path << "\n";
  (void)runOne(reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
               (*buffer)->getBufferSize());
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    if (arg == "-v" || arg == "--verbose") {
      ::setenv("VORTEX_FUZZ_VERBOSE", "1", 1);
    } else if (arg == "-h" || arg == "--help") {
      llvm::outs() << "usage: vortex-fuzz [-v] FILE|DIR|-...\n"
                      "Runs each input (MLIR text, optionally led by a "
                      "`//! stage ...` line) through the fuzz target once "
                      "(this build has no libFuzzer; see docs/fuzzing.md).\n";
      return 0;
    } else if (arg.starts_with("-") && arg != "-") {
      // libFuzzer flags (-runs=, -timeout=, ...) mean nothing here.
      llvm::errs() << "vortex-fuzz: ignoring " << arg
                   << " (replay driver, no libFuzzer)\n";
    } else {
      paths.push_back(arg.str());
    }
  }
  if (paths.empty()) {
    llvm::errs() << "usage: vortex-fuzz [-v] FILE|DIR|-...\n";
    return 2;
  }
  (void)getRegistry();
  int rc = 0;
  for (const std::string &path : paths) {
    if (!llvm::sys::fs::is_directory(path)) {
      rc |= replayFile(path);
      continue;
    }
    std::error_code ec;
    std::vector<std::string> files;
    for (llvm::sys::fs::recursive_directory_iterator it(path, ec), end;
         it != end && !ec; it.increment(ec))
      if (llvm::sys::fs::is_regular_file(it->path()))
        files.push_back(it->path());
    llvm::sort(files);
    for (const std::string &file : files)
      rc |= replayFile(file);
  }
  llvm::outs() << "vortex-fuzz: " << stats.inputs << " inputs, "
               << stats.skipped << " skipped, " << stats.parsed << " parsed, "
               << stats.pipelines << " pipelines run, " << stats.succeeded
               << " succeeded\n";
  return rc;
}

#endif
