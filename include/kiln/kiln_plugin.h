/* Kiln plugin ABI: everything a plugin (an optimization pass, a cost model,
 * a backend) needs to talk to Kiln, in plain C99.
 *
 * A plugin is a shared library exporting one symbol:
 *
 *     const kiln_plugin_t* kiln_plugin_query(uint32_t host_abi_version);
 *
 * It returns a descriptor whose abi_version it speaks, or NULL if it can speak
 * nothing the host accepts. Versions are major << 16 | minor. The host refuses
 * a plugin of another major version, or of a newer minor version than its own.
 *
 * Rules that keep the ABI stable:
 *   - every struct that crosses the boundary starts with `uint32_t struct_size`
 *     and only ever grows at the end; a reader checks struct_size (through
 *     KILN_PLUGIN_HAS_FIELD) before it touches a field added later;
 *   - arrays of structs never cross the boundary (their stride would freeze
 *     the struct's size); lists are arrays of pointers;
 *   - the host owns the graph: a pass reads it through kiln_host_api_t and
 *     stages edits in a rewriter; the view shows the staged state (a pass sees
 *     its own edits), but nothing reaches the host's graph until the pass
 *     returns success and the edited graph verifies and re-infers its shapes,
 *     so a failing or buggy pass changes nothing;
 *   - a rewriter call that fails (bad id, wrong region) returns 0 and is also
 *     remembered: the host refuses to commit a run with a failed edit, so a
 *     pass that ignores return codes cannot commit half of what it meant;
 *   - statuses are made and freed by the host (NULL = success); no allocation
 *     crosses heaps; strings the host returns live until the pass returns;
 *   - plugins never print: they log through the host.
 */
#ifndef KILN_KILN_PLUGIN_H_
#define KILN_KILN_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_PLUGIN_ABI_MAJOR 1u
#define KILN_PLUGIN_ABI_MINOR 8u
#define KILN_PLUGIN_ABI_VERSION ((KILN_PLUGIN_ABI_MAJOR << 16) | KILN_PLUGIN_ABI_MINOR)
#define KILN_PLUGIN_ABI_VERSION_MAJOR(v) ((uint32_t)(v) >> 16)
#define KILN_PLUGIN_ABI_VERSION_MINOR(v) ((uint32_t)(v)&0xffffu)

/* True when a struct of size `size` holds `field` (size-tolerant reads). */
#define KILN_PLUGIN_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

#if defined(_WIN32)
#define KILN_PLUGIN_EXPORT __declspec(dllexport)
#else
#define KILN_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---- ids, statuses, facts ---------------------------------------------- */

typedef int32_t kiln_node_id_t;   /* dense ids; -1 = none */
typedef int32_t kiln_value_id_t;  /* -1 = an omitted optional input */
typedef int32_t kiln_region_id_t; /* 0 = the main graph */
#define KILN_NO_ID (-1)

/* Opaque, host-made status. NULL means success. */
typedef struct kiln_plugin_status_t kiln_plugin_status_t;

/* Same numbering as kiln_status_code_t in kiln.h. */
typedef enum kiln_plugin_code_t {
  KILN_PLUGIN_OK = 0,
  KILN_PLUGIN_INVALID_ARGUMENT = 1,
  KILN_PLUGIN_NOT_FOUND = 2,
  KILN_PLUGIN_UNIMPLEMENTED = 3,
  KILN_PLUGIN_OUT_OF_MEMORY = 4,
  KILN_PLUGIN_INTERNAL = 6,
  KILN_PLUGIN_FAILED_PRECONDITION = 7
} kiln_plugin_code_t;

typedef enum kiln_log_level_t {
  KILN_LOG_DEBUG = 0,
  KILN_LOG_INFO = 1,
  KILN_LOG_WARNING = 2,
  KILN_LOG_ERROR = 3
} kiln_log_level_t;

/* Facts a pass requires (computed before it runs) and invalidates. */
typedef enum kiln_fact_t {
  KILN_FACT_SHAPES = 1u << 0,         /* dtypes and symbolic shapes of every value */
  KILN_FACT_LAYOUTS = 1u << 1,        /* per-value layout / storage annotations */
  KILN_FACT_FUSION_GROUPS = 1u << 2,  /* per-node fusion-group annotations */
  KILN_FACT_KERNEL_CONFIGS = 1u << 3, /* per-node tile / work-group choices */
  KILN_FACT_MEMORY_PLAN = 1u << 4     /* execution order and arena offsets */
} kiln_fact_t;

/* ---- well-known annotation keys ----------------------------------------- */

/* \since 1.2. Annotation keys with a meaning beyond the pass that writes
 * them: the host (planner) or other passes read them, so their spelling is
 * part of the ABI. Other keys are free-form; prefix them with the plugin's
 * name ("acme.tile"). */
/* Node: position in the main graph's execution order ("0", "1", ...); the
 * planner follows it when every live main node carries a valid one. */
#define KILN_ANNOTATION_MEMPLAN_ORDER "memplan.order"
/* Node: SoD² dynamism class from kiln.rdp ("ISDO", "ISDOS", "ISVDOS", "EDO"). */
#define KILN_ANNOTATION_RDP_CLASS "rdp.class"
/* Value: the known elements of shape data from kiln.rdp ("[-1,s,4,16]"). */
#define KILN_ANNOTATION_RDP_VALUE "rdp.value"

/* \since 1.2. Planner hooks: annotations the planner reads (rw_annotate_value /
 * rw_annotate_node). Without them the planner's own choices apply, bit for
 * bit; a malformed one fails the compile with a message naming the value or
 * node. A pass that sets them declares the matching fact in
 * `invalidates_facts` (KILN_FACT_LAYOUTS, KILN_FACT_KERNEL_CONFIGS,
 * KILN_FACT_FUSION_GROUPS).
 *   value KILN_ANNOTATION_STORAGE      "buffer" | "image": where the tensor lives
 *                                      (constants, non-float tensors and images
 *                                      beyond the device's limit stay buffers)
 *   value KILN_ANNOTATION_PACKED_AXIS  "<axis>": the axis an image packs into
 *                                      its 4 texel channels
 *   node  KILN_ANNOTATION_KERNEL       "tile=MxN,split_k=S,splitk_reduce=
 *                                      separate|fused,coopmat=on|off": a
 *                                      GEMM-family node's kernel (M in 16, 32,
 *                                      64 or 128x64; N in 16, 32, 64; S 1-16;
 *                                      splitk_reduce: K slices added by a
 *                                      second dispatch, or by the tile
 *                                      kernel's last workgroup per tile where
 *                                      the grid has a constant size;
 *                                      attention_rows=8|16|32|64 on an
 *                                      attention group's last MatMul;
 *                                      gemv_columns=8|16|32 for M <= 4)
 *   node  KILN_ANNOTATION_FUSION_GROUP "<id>" (letters, digits, "_.:-", at most
 *                                      64): nodes of the main graph sharing an
 *                                      id are one fusion group, which the
 *                                      planner runs as one kernel where it can
 *                                      (one output, other values read only by
 *                                      the group; an elementwise chain, any
 *                                      op followed by elementwise ops, or
 *                                      depthwise conv + elementwise + 1x1
 *                                      conv + elementwise: planner/README.md
 *                                      says exactly which); a group it cannot
 *                                      fuse runs unfused, the reason recorded
 *                                      in the plan. KILN_FACT_FUSION_GROUPS. */
#define KILN_ANNOTATION_STORAGE "kiln.storage"
#define KILN_ANNOTATION_PACKED_AXIS "kiln.packed_axis"
#define KILN_ANNOTATION_KERNEL "kiln.kernel"
#define KILN_ANNOTATION_FUSION_GROUP "kiln.fusion_group"

/* ---- the graph as a plugin sees it ------------------------------------------ */

typedef struct kiln_graph_t kiln_graph_t;       /* read-only view, valid during a pass */
typedef struct kiln_rewriter_t kiln_rewriter_t; /* staged edits of one pass run */

typedef enum kiln_attr_kind_t {
  KILN_ATTR_INT = 0,
  KILN_ATTR_FLOAT = 1,
  KILN_ATTR_STRING = 2,
  KILN_ATTR_INTS = 3,
  KILN_ATTR_FLOATS = 4,
  KILN_ATTR_STRINGS = 5,
  KILN_ATTR_TENSOR = 6,
  KILN_ATTR_GRAPH = 7,
  KILN_ATTR_NONE = -1 /* no such attribute */
} kiln_attr_kind_t;

/* A symbolic dim: a constant, or a symbolic expression (printed form in
 * `expr`, e.g. "seq", "((h*2)+1)"), or unknown. */
typedef struct kiln_dim_t {
  uint32_t struct_size;
  int32_t is_const;    /* 1: `value` holds the dim */
  int32_t is_unknown;  /* 1: nothing is known */
  int64_t value;
  const char* expr;    /* symbolic form; valid during the pass */
} kiln_dim_t;

/* \since 1.2. Element types: what kiln_value_info_t::dtype, rw_add_value and
 * rw_add_constant carry (an int32_t, so a newer host's type is just another
 * number). The numbering is kiln_dtype_t's in kiln.h and never changes. */
typedef enum kiln_plugin_dtype_t {
  KILN_PLUGIN_DTYPE_UNDEFINED = 0,
  KILN_PLUGIN_DTYPE_FLOAT32 = 1,
  KILN_PLUGIN_DTYPE_FLOAT16 = 2,
  KILN_PLUGIN_DTYPE_FLOAT64 = 3,
  KILN_PLUGIN_DTYPE_INT8 = 4,
  KILN_PLUGIN_DTYPE_UINT8 = 5,
  KILN_PLUGIN_DTYPE_INT16 = 6,
  KILN_PLUGIN_DTYPE_INT32 = 7,
  KILN_PLUGIN_DTYPE_INT64 = 8,
  KILN_PLUGIN_DTYPE_BOOL = 9,
  KILN_PLUGIN_DTYPE_UINT16 = 10,
  KILN_PLUGIN_DTYPE_UINT32 = 11,
  KILN_PLUGIN_DTYPE_UINT64 = 12
} kiln_plugin_dtype_t;

/* \since 1.2. Bytes per element of `dtype` (bool: 1); 0 for UNDEFINED or a
 * number this header does not know. */
static inline size_t kiln_plugin_dtype_size(int32_t dtype) {
  switch (dtype) {
    case KILN_PLUGIN_DTYPE_INT8: case KILN_PLUGIN_DTYPE_UINT8: case KILN_PLUGIN_DTYPE_BOOL: return 1;
    case KILN_PLUGIN_DTYPE_FLOAT16: case KILN_PLUGIN_DTYPE_INT16: case KILN_PLUGIN_DTYPE_UINT16: return 2;
    case KILN_PLUGIN_DTYPE_FLOAT32: case KILN_PLUGIN_DTYPE_INT32: case KILN_PLUGIN_DTYPE_UINT32: return 4;
    case KILN_PLUGIN_DTYPE_FLOAT64: case KILN_PLUGIN_DTYPE_INT64: case KILN_PLUGIN_DTYPE_UINT64: return 8;
    default: return 0;
  }
}

/* \since 1.2. True for the integer types (bool is not one). */
static inline int kiln_plugin_dtype_is_int(int32_t dtype) {
  return (dtype >= KILN_PLUGIN_DTYPE_INT8 && dtype <= KILN_PLUGIN_DTYPE_INT64) ||
         (dtype >= KILN_PLUGIN_DTYPE_UINT16 && dtype <= KILN_PLUGIN_DTYPE_UINT64);
}

/* \since 1.3. DNNFusion's mapping type of an op (what op_mapping returns):
 * how its output elements depend on its input elements. Fusion legality is
 * decided from it (plugins/fusion). The numbering never changes; a newer
 * host's type is just another number, which a reader treats as OTHER. */
typedef enum kiln_mapping_t {
  KILN_MAPPING_UNKNOWN = 0,      /* no such op (or the host cannot say) */
  KILN_MAPPING_ONE_TO_ONE = 1,   /* elementwise: Add, Relu, Cast, Clip, Where */
  KILN_MAPPING_ONE_TO_MANY = 2,  /* an input element feeds several: Expand, Tile, Resize */
  KILN_MAPPING_MANY_TO_MANY = 3, /* complex: Conv, MatMul, Gemm, pooling, Reduce*, Softmax, norms */
  KILN_MAPPING_REORGANIZE = 4,   /* same elements, new shape: Reshape, Flatten, Squeeze, Concat */
  KILN_MAPPING_SHUFFLE = 5,      /* same elements, permuted: Transpose, DepthToSpace */
  KILN_MAPPING_OTHER = 6         /* opaque to fusion: If, Loop, Shape, Gather, Slice, ... */
} kiln_mapping_t;

/* \since 1.4. SmartMem's operator layout class (what op_layout returns):
 * whether an op's cost depends on its inputs' layout (ILD) or not (ILI), and
 * whether its output layout is the op's to choose (Variable) or follows from
 * its input's (Fixed). The numbering never changes. */
typedef enum kiln_layout_class_t {
  KILN_LAYOUT_CLASS_UNKNOWN = 0,      /* no such op, or not classifiable (If, Loop, LSTM) */
  KILN_LAYOUT_CLASS_ILD_VARIABLE = 1, /* Conv, MatMul, Gemm, Softmax, LayerNorm, Reduce*, pooling */
  KILN_LAYOUT_CLASS_ILI_VARIABLE = 2, /* elementwise and broadcasting: Add, Relu, Expand, Resize */
  KILN_LAYOUT_CLASS_ILD_FIXED = 3,    /* layout transforms: Reshape, Transpose, Squeeze, DepthToSpace */
  KILN_LAYOUT_CLASS_ILI_FIXED = 4     /* selections and placements: Slice, Gather, Concat, Split, Pad */
} kiln_layout_class_t;

/* \since 1.4. What op_layout says about one input of a node. Grows only at
 * the end; the caller sets struct_size. */
typedef struct kiln_op_layout_t {
  uint32_t struct_size;
  int32_t layout_class; /* a kiln_layout_class_t number */
  /* The input's reduction dimensions: bit k set when the op aggregates or
   * reads a window along axis k (0-based in the input's own rank, k < 64).
   * MatMul: A's last axis, B's axis -2; Conv: the data input's channels and
   * spatial window; Softmax/LayerNorm/Reduce*: their axes; 0 for
   * elementwise ops, layout transforms and parameters (biases, scales). */
  uint64_t reduction_axes;
} kiln_op_layout_t;

/* \since 1.4. The session's storage option as target_info reports it
 * (kiln_target_info_t::storage_mode): AUTO lets a layout pass choose buffer
 * or image per tensor; BUFFER and IMAGE are forced for every activation. */
typedef enum kiln_storage_mode_t {
  KILN_STORAGE_MODE_AUTO = 0,
  KILN_STORAGE_MODE_BUFFER = 1,
  KILN_STORAGE_MODE_IMAGE = 2
} kiln_storage_mode_t;

/* dtype is a kiln_plugin_dtype_t number. */
typedef struct kiln_value_info_t {
  uint32_t struct_size;
  const char* name;
  int32_t dtype;
  int32_t rank;              /* -1 = unknown rank */
  kiln_node_id_t producer;   /* KILN_NO_ID for inputs and constants */
  int32_t producer_output;
  int32_t is_constant;       /* 1: constant data readable with value_constant */
  kiln_region_id_t region;
} kiln_value_info_t;

typedef struct kiln_node_info_t {
  uint32_t struct_size;
  const char* op;
  const char* domain; /* "" for the default ONNX domain */
  const char* name;
  size_t input_count;
  size_t output_count;
  kiln_region_id_t region;
} kiln_node_info_t;

/* \since 1.3. What the device a pipeline compiles for can do, as the host's
 * target_info reports it (kiln_host_api_t::target_info): the facts a cost
 * model (tile sizes, fusion decisions) needs. Grows only at the end; the
 * caller sets struct_size and reads later fields through
 * KILN_PLUGIN_HAS_FIELD. */
typedef struct kiln_target_info_t {
  uint32_t struct_size;
  uint64_t shared_memory_bytes;       /* per workgroup (maxComputeSharedMemorySize) */
  uint32_t compute_units;             /* SMs / CUs / shader cores; 0 = unknown */
  uint32_t subgroup_size;             /* 0: no subgroup operations in compute */
  uint32_t max_workgroup_invocations;
  uint32_t max_image_dimension_2d;
  int32_t cooperative_matrix;         /* 1: the planner may use tensor cores for fp16 GEMMs */
  int32_t fp16_arithmetic;            /* 1: shaderFloat16 */
  uint32_t vendor_id;                 /* PCI vendor (0x10de NVIDIA, 0x1002 AMD, 0x13b5 ARM, 0x10005 Mesa) */
  char device_name[256];              /* NUL-terminated */
  /* \since 1.4. VkPhysicalDeviceType numbering: 0 other, 1 integrated GPU,
   * 2 discrete GPU, 3 virtual GPU, 4 CPU (lavapipe). */
  int32_t device_type;
  /* \since 1.4. A kiln_storage_mode_t number: where the session wants
   * activations (a host of 1.3 leaves the caller's value). */
  int32_t storage_mode;
} kiln_target_info_t;

/* The host's function table. Pointers stay valid while the plugin is loaded. */
typedef struct kiln_host_api_t {
  uint32_t struct_size;
  uint32_t abi_version;

  /* statuses and logging */
  kiln_plugin_status_t* (*make_status)(kiln_plugin_code_t code, const char* message);
  void (*log)(kiln_log_level_t level, const char* message);

  /* regions and nodes: region_node_count/at walk a region's nodes in order */
  size_t (*region_count)(const kiln_graph_t* g);
  size_t (*region_node_count)(const kiln_graph_t* g, kiln_region_id_t region);
  kiln_node_id_t (*region_node_at)(const kiln_graph_t* g, kiln_region_id_t region, size_t index);
  size_t (*region_input_count)(const kiln_graph_t* g, kiln_region_id_t region);
  kiln_value_id_t (*region_input_at)(const kiln_graph_t* g, kiln_region_id_t region, size_t index);
  size_t (*region_output_count)(const kiln_graph_t* g, kiln_region_id_t region);
  kiln_value_id_t (*region_output_at)(const kiln_graph_t* g, kiln_region_id_t region, size_t index);

  int32_t (*node_info)(const kiln_graph_t* g, kiln_node_id_t node, kiln_node_info_t* out); /* 0 if no such node */
  kiln_value_id_t (*node_input)(const kiln_graph_t* g, kiln_node_id_t node, size_t index);
  kiln_value_id_t (*node_output)(const kiln_graph_t* g, kiln_node_id_t node, size_t index);

  /* attributes: kind (KILN_ATTR_NONE if absent) and typed readers */
  kiln_attr_kind_t (*attr_kind)(const kiln_graph_t* g, kiln_node_id_t node, const char* key);
  int64_t (*attr_int)(const kiln_graph_t* g, kiln_node_id_t node, const char* key, int64_t fallback);
  float (*attr_float)(const kiln_graph_t* g, kiln_node_id_t node, const char* key, float fallback);
  const char* (*attr_string)(const kiln_graph_t* g, kiln_node_id_t node, const char* key);
  size_t (*attr_ints)(const kiln_graph_t* g, kiln_node_id_t node, const char* key, int64_t* out, size_t capacity);
  size_t (*attr_floats)(const kiln_graph_t* g, kiln_node_id_t node, const char* key, float* out, size_t capacity);
  kiln_region_id_t (*attr_graph)(const kiln_graph_t* g, kiln_node_id_t node, const char* key);

  /* values: info, dims, constants, uses */
  int32_t (*value_info)(const kiln_graph_t* g, kiln_value_id_t value, kiln_value_info_t* out); /* 0 if none */
  int32_t (*value_dim)(const kiln_graph_t* g, kiln_value_id_t value, size_t axis, kiln_dim_t* out);
  /* Constant data as row-major bytes; NULL unless the value is constant. */
  const void* (*value_constant)(const kiln_graph_t* g, kiln_value_id_t value, size_t* out_bytes);
  size_t (*value_use_count)(const kiln_graph_t* g, kiln_value_id_t value);
  /* The i-th use: consuming node and input index. A region output is a use
   * too: *out_node = KILN_NO_ID and *out_input_index = the output's index,
   * so a use count of 0 means the value is dead. */
  int32_t (*value_use_at)(const kiln_graph_t* g, kiln_value_id_t value, size_t index, kiln_node_id_t* out_node,
                          size_t* out_input_index);
  /* Annotation previously attached to a node or value (NULL if none). */
  const char* (*node_annotation)(const kiln_graph_t* g, kiln_node_id_t node, const char* key);
  const char* (*value_annotation)(const kiln_graph_t* g, kiln_value_id_t value, const char* key);

  /* rewriter: staged edits, committed only when the pass succeeds.
   * New values and nodes get ids the pass can use immediately in later edits. */
  kiln_value_id_t (*rw_add_value)(kiln_rewriter_t* rw, const char* name, int32_t dtype, kiln_region_id_t region);
  kiln_value_id_t (*rw_add_constant)(kiln_rewriter_t* rw, const char* name, int32_t dtype, const int64_t* shape,
                                     size_t rank, const void* data, size_t bytes, kiln_region_id_t region);
  kiln_node_id_t (*rw_add_node)(kiln_rewriter_t* rw, const char* op, const char* domain, const char* name,
                                const kiln_value_id_t* inputs, size_t input_count, const kiln_value_id_t* outputs,
                                size_t output_count, kiln_region_id_t region, kiln_node_id_t insert_before);
  int32_t (*rw_erase_node)(kiln_rewriter_t* rw, kiln_node_id_t node);
  /* Every use of `from` (node inputs and region outputs) now reads `to`. */
  int32_t (*rw_replace_uses)(kiln_rewriter_t* rw, kiln_value_id_t from, kiln_value_id_t to);
  int32_t (*rw_set_input)(kiln_rewriter_t* rw, kiln_node_id_t node, size_t index, kiln_value_id_t value);
  int32_t (*rw_set_attr_int)(kiln_rewriter_t* rw, kiln_node_id_t node, const char* key, int64_t value);
  int32_t (*rw_set_attr_float)(kiln_rewriter_t* rw, kiln_node_id_t node, const char* key, float value);
  int32_t (*rw_set_attr_string)(kiln_rewriter_t* rw, kiln_node_id_t node, const char* key, const char* value);
  int32_t (*rw_set_attr_ints)(kiln_rewriter_t* rw, kiln_node_id_t node, const char* key, const int64_t* values,
                              size_t count);
  int32_t (*rw_set_attr_floats)(kiln_rewriter_t* rw, kiln_node_id_t node, const char* key, const float* values,
                                size_t count);
  int32_t (*rw_remove_attr)(kiln_rewriter_t* rw, kiln_node_id_t node, const char* key);
  /* Annotations: free-form key/value strings that later passes and the
   * planner read (layouts, fusion groups, kernel configurations). */
  int32_t (*rw_annotate_node)(kiln_rewriter_t* rw, kiln_node_id_t node, const char* key, const char* value);
  int32_t (*rw_annotate_value)(kiln_rewriter_t* rw, kiln_value_id_t value_id, const char* key, const char* value);
  /* Statistics shown by --stats ("nodes-fused" += 3). */
  void (*rw_add_statistic)(kiln_rewriter_t* rw, const char* key, int64_t delta);

  /* \since 1.0, optional (check with KILN_PLUGIN_HAS_FIELD; NULL if the host
   * has no kernels). Evaluates `node`, whose inputs must all be constants in
   * the staged graph, with the host's reference kernels and stages one new
   * constant per output in out_values[0..output_count). The node itself is
   * left in place (replace its uses and erase it). Returns 1 on success, 0 if
   * the node cannot be evaluated (non-constant input, sub-graph, unknown op,
   * kernel error); a refusal is not a rewriter failure and is logged at
   * debug level only. */
  int32_t (*evaluate_node)(kiln_rewriter_t* rw, kiln_node_id_t node, kiln_value_id_t* out_values,
                           size_t capacity);
  /* \since 1.0. The name of the node's index-th attribute in name order, or
   * NULL past the last one (with attr_kind, lets a pass copy or compare all
   * attributes of a node). */
  const char* (*attr_name_at)(const kiln_graph_t* g, kiln_node_id_t node, size_t index);
  /* \since 1.1, optional (check with KILN_PLUGIN_HAS_FIELD). Stages the rank
   * and dims of a non-constant `value`: dim_exprs[0..rank) in the text form
   * value_dim returns in `expr` ("64", "seq", "((h*2)+1)"; "?" = unknown),
   * simplified by the host as it parses them. Facts a shape analysis found
   * (kiln.rdp) become the value's shape, which the planner and runtime use.
   * When the pass commits, the host re-infers shapes: what inference knows
   * replaces a dim, where it knows less the dim set here stays. Returns 1, or
   * 0 (a rewriter failure) for a bad id, a constant, a NULL expression, a
   * negative constant or text that does not parse. */
  int32_t (*rw_set_value_dims)(kiln_rewriter_t* rw, kiln_value_id_t value, const char* const* dim_exprs,
                               size_t rank);
  /* \since 1.2, optional (check with KILN_PLUGIN_HAS_FIELD). Runs the host's
   * own shape inference for `node` (the op registry's, which the host also
   * re-infers with after every pass) on input shapes the caller supplies
   * instead of the graph's, so a plugin need not re-implement ops. The op,
   * attributes and input dtypes are the staged graph's, and a constant input
   * is the graph's own (shape and data; its entries here are ignored). For
   * every other input i < the node's input count: rank input_ranks[i] (-1 =
   * unknown) and dims input_dims[i][0..rank) in value_dim's text form ("?" =
   * unknown); and, for shape data (an integer input of rank <= 1 whose
   * element count is its constant dim, or 1 for a scalar), its elements in
   * input_values[i][0..count) when input_values and input_values[i] are not
   * NULL. For each output k < output_capacity it writes out_ranks[k] (-1 =
   * unknown) and out_dims[k]: out_ranks[k] dims in the same text form and a
   * NULL, owned by the host and valid until the pass returns. Nothing is
   * staged. Returns 1, or 0 (not a rewriter failure; logged at debug level)
   * when the op has no inference, the node owns a sub-graph, an input's
   * dtype is unknown, a dim does not parse or inference rejects the shapes. */
  int32_t (*infer_node_dims)(const kiln_graph_t* g, kiln_node_id_t node, const int32_t* input_ranks,
                             const char* const* const* input_dims, const char* const* const* input_values,
                             int32_t* out_ranks, const char* const** out_dims, size_t output_capacity);
  /* \since 1.3, optional (check with KILN_PLUGIN_HAS_FIELD). The DNNFusion
   * mapping type (a kiln_mapping_t number) of `op` in `domain` ("" or NULL
   * for ONNX) in the host's op registry; KILN_MAPPING_UNKNOWN when the host
   * has no such op. Needs no graph: callable at any time. */
  int32_t (*op_mapping)(const char* domain, const char* op);
  /* \since 1.3, optional (check with KILN_PLUGIN_HAS_FIELD). Removes the
   * annotation `key` from a node or value (an empty value is a value, not a
   * removal: the planner refuses an empty fusion group id). Returns 1, also
   * when there was no such annotation; 0 (a rewriter failure) for a bad id
   * or an empty key. */
  int32_t (*rw_remove_node_annotation)(kiln_rewriter_t* rw, kiln_node_id_t node, const char* key);
  int32_t (*rw_remove_value_annotation)(kiln_rewriter_t* rw, kiln_value_id_t value, const char* key);
  /* \since 1.3, optional (check with KILN_PLUGIN_HAS_FIELD). The device the
   * pipeline compiles for: fills *out (up to out->struct_size bytes, which
   * the caller sets; fields past it are left alone) and returns 1. Returns 0
   * and leaves *out untouched when the pipeline runs for no device (`kiln
   * graph` without one, a reference-backend session, a backend plugin's
   * compile) or out is NULL or its struct_size is too small to hold
   * struct_size itself. */
  int32_t (*target_info)(const kiln_graph_t* g, kiln_target_info_t* out);
  /* \since 1.4, optional (check with KILN_PLUGIN_HAS_FIELD). SmartMem's
   * layout class of `node`'s op and the reduction dimensions of its input
   * `input_index`, from the host's op registry: fills *out (up to
   * out->struct_size bytes, which the caller sets) and returns 1. Returns 0
   * for a bad node id, an input index past the node's inputs, or out NULL
   * or too small; an op the registry does not know is class UNKNOWN with
   * no reduction axes (returns 1). */
  int32_t (*op_layout)(const kiln_graph_t* g, kiln_node_id_t node, size_t input_index, kiln_op_layout_t* out);
  /* \since 1.4, optional (check with KILN_PLUGIN_HAS_FIELD). The graph in
   * Kiln's textual IR (engine/ir/text.h), every constant's elements printed
   * exactly (floats to 9, doubles to 17 significant digits): a backend
   * plugin built from Kiln's own sources (the OpenCL backend) rebuilds the
   * graph with the IR's parser and plans it with Kiln's planner, through
   * this one call rather than a walk of the whole view. Stores the length
   * in *out_length when it is not NULL. Owned by the host and valid until
   * the call (pass or compile) returns. */
  const char* (*graph_text)(const kiln_graph_t* g, size_t* out_length);
  /* \since 1.8, optional (check with KILN_PLUGIN_HAS_FIELD). graph_text,
   * except that every constant of more than `inline_elements` elements
   * prints as `dense<external(ID)>`, ID its value id in `g`: the plugin
   * reads those bytes with value_constant (ir::ParseOptions::
   * external_constant) instead of printing and parsing them, which for a
   * ViT-B/16's 86 M weights took over a minute. inline_elements < 0 prints
   * every constant, as graph_text. */
  const char* (*graph_text_external)(const kiln_graph_t* g, int64_t inline_elements, size_t* out_length);
} kiln_host_api_t;

/* ---- what a plugin provides --------------------------------------------- */

typedef struct kiln_pass_t {
  uint32_t struct_size;
  const char* name;        /* kebab-case; third parties prefix a vendor: "acme.fuse-gelu" */
  const char* description;
  uint32_t requires_facts;    /* kiln_fact_t bits */
  uint32_t invalidates_facts; /* kiln_fact_t bits */
  /* Runs on `graph`, staging edits in `rw`. Returns NULL on success or a
   * status made with host->make_status. `pass_state` is the pointer below. */
  kiln_plugin_status_t* (*run)(void* pass_state, const kiln_host_api_t* host, const kiln_graph_t* graph,
                               kiln_rewriter_t* rw);
  void* pass_state;
  /* Facts this pass computes (kiln_fact_t bits), valid after it commits. */
  uint32_t provides_facts;
  /* 1: the pipeline fails if this pass fails; 0: a failure is skipped with a
   * warning (the graph stays as it was before the pass). */
  int32_t required;
} kiln_pass_t;

/* ---- a backend a plugin provides (\since 1.2) ------------------------------- */

/* The interface name a backend plugin answers in get_interface. */
#define KILN_INTERFACE_BACKEND_V1 "kiln.backend.v1"

/* A dense, row-major host tensor crossing the boundary for the duration of
 * one call. dtype is a kiln_plugin_dtype_t number. */
typedef struct kiln_tensor_view_t {
  uint32_t struct_size;
  int32_t dtype;
  size_t rank;
  const int64_t* dims; /* rank entries */
  void* data;          /* the elements; read-only for inputs */
} kiln_tensor_view_t;

/* Gives the plugin the memory of output `index` (graph output order) with
 * this dtype and shape; NULL if the host refuses (wrong index, dtype or
 * out of memory), which the plugin reports as a failed run. */
typedef void* (*kiln_backend_alloc_output_fn)(void* alloc_ctx, size_t index, int32_t dtype, size_t rank,
                                              const int64_t* dims);

/* \since 1.5: what the session asks of a backend's compile
 * (kiln_backend_v1_t::compile_with_options), from its options. Grows only at
 * the end (struct_size). */
#define KILN_PLUGIN_PRECISION_FP32 0
#define KILN_PLUGIN_PRECISION_FP16 1
#define KILN_PLUGIN_STORAGE_AUTO 0   /* the backend chooses */
#define KILN_PLUGIN_STORAGE_IMAGE 1  /* activations in images (2.5D textures) */
#define KILN_PLUGIN_STORAGE_BUFFER 2 /* activations in buffers */
typedef struct kiln_backend_options_t {
  uint32_t struct_size;
  int32_t precision; /* KILN_PLUGIN_PRECISION_*: the float type of weights and activations */
  int32_t storage;   /* KILN_PLUGIN_STORAGE_* */
  uint32_t profile;  /* nonzero: time every kernel of every run (run_with_stats reports them) */
} kiln_backend_options_t;

/* \since 1.5: what compiling a model did to the backend's kernel cache
 * (kiln_backend_v1_t::model_compile_stats). Grows only at the end. */
typedef struct kiln_backend_compile_stats_t {
  uint32_t struct_size;
  uint64_t kernels_built;  /* kernels compiled from source */
  uint64_t disk_hits;      /* kernels loaded from the backend's on-disk cache */
  uint64_t memory_hits;    /* kernels this process had compiled or loaded before */
  uint64_t rejected_files; /* cache files found corrupt or foreign (then rebuilt) */
} kiln_backend_compile_stats_t;

/* \since 1.5: one dispatch of a run (kiln_backend_run_stats_t::add_kernel).
 * Grows only at the end (struct_size); the strings live for the call. */
typedef struct kiln_backend_kernel_stats_t {
  uint32_t struct_size;
  const char* kernel; /* the kernel's name ("conv2d_1x1") */
  const char* node;   /* the graph node it implements (name, else op) */
  double device_ms;   /* its time on the device; -1: not measured */
  /* Global memory it moves (each tensor it binds, whole: those it only
   * reads, those it writes) and its FLOPs (0: not counted). */
  uint64_t bytes_read, bytes_written, flops;
} kiln_backend_kernel_stats_t;

/* \since 1.5: what one run did (kiln_backend_v1_t::run_with_stats). The
 * host sets struct_size, add_kernel and ctx and zeroes the rest; the plugin
 * writes the fields its struct_size holds. */
typedef struct kiln_backend_run_stats_t {
  uint32_t struct_size;
  double device_ms;    /* the run's kernels on the device, first start to last end; -1: not measured */
  uint32_t dispatches; /* kernels enqueued */
  uint32_t fallbacks;  /* nodes run on the host (reference kernels) */
  uint64_t bytes_read, bytes_written; /* summed over the dispatches (kiln_backend_kernel_stats_t) */
  uint32_t fused_dispatches;          /* of the dispatches, fused kernels ("fused..." or a '+' in the name) */
  /* Profiled compiles only: one call per dispatch, in execution order. */
  void (*add_kernel)(void* ctx, const kiln_backend_kernel_stats_t* kernel);
  void* ctx;
  /* \since 1.7: device memory in bytes, 0 when not reported. device_bytes:
   * what the model holds on the device after the run (weights, activation
   * memory, other buffers); activation_bytes: the run's planned activation
   * memory (an arena: tensors whose lifetimes do not overlap share bytes);
   * no_reuse_bytes: the same tensors in a buffer each. */
  uint64_t device_bytes, activation_bytes, no_reuse_bytes;
} kiln_backend_run_stats_t;

/* What get_interface(KILN_INTERFACE_BACKEND_V1) returns: a backend the
 * engine session compiles and runs models on (the OpenCL backend is one),
 * chosen by name. Grows only at the end (struct_size). */
typedef struct kiln_backend_v1_t {
  uint32_t struct_size;
  const char* name; /* "acme.npu": what a session names to run on it */
  void* state;      /* passed back to compile */
  /* Compiles the graph, read through `host` during the call, into a model
   * of the plugin's own (*out_model). A graph the backend cannot run is a
   * status (KILN_PLUGIN_UNIMPLEMENTED, naming the node and op). */
  kiln_plugin_status_t* (*compile)(void* state, const kiln_host_api_t* host, const kiln_graph_t* graph,
                                   void** out_model);
  /* Runs the model: inputs in graph input order (input_count pointers to
   * views); every output's memory comes from alloc_output. Must be
   * thread-safe for concurrent runs of one model. Statuses are made with
   * host->make_status. */
  kiln_plugin_status_t* (*run)(void* model, const kiln_host_api_t* host, const kiln_tensor_view_t* const* inputs,
                               size_t input_count, kiln_backend_alloc_output_fn alloc_output, void* alloc_ctx);
  /* Frees a compiled model. */
  void (*destroy)(void* model);
  /* \since 1.4, optional (check with KILN_PLUGIN_HAS_FIELD; NULL when the
   * backend has nothing to list). A readable listing of the devices the
   * backend can run on (`kiln info` prints it): platforms, devices, their
   * limits and extensions, or why there are none. Owned by the plugin,
   * valid until the next call; NULL on failure. */
  const char* (*describe)(void* state);
  /* \since 1.4, optional (check with KILN_PLUGIN_HAS_FIELD). What a
   * compiled model runs: kernel dispatches per run and nodes on the host
   * (fallbacks), for the session's statistics (`kiln run`). */
  void (*model_counts)(void* model, size_t* dispatches, size_t* fallbacks);
  /* \since 1.5, optional (check with KILN_PLUGIN_HAS_FIELD). compile with
   * the session's precision, storage and profiling; the host prefers it to
   * compile. A choice the backend cannot honour is a status naming it
   * (fp16 without the device's half-precision support), never a silent
   * fp32 or buffer model. */
  kiln_plugin_status_t* (*compile_with_options)(void* state, const kiln_host_api_t* host, const kiln_graph_t* graph,
                                                const kiln_backend_options_t* options, void** out_model);
  /* \since 1.5, optional. run, also filling `stats` (see
   * kiln_backend_run_stats_t); the host prefers it to run. */
  kiln_plugin_status_t* (*run_with_stats)(void* model, const kiln_host_api_t* host,
                                          const kiln_tensor_view_t* const* inputs, size_t input_count,
                                          kiln_backend_alloc_output_fn alloc_output, void* alloc_ctx,
                                          kiln_backend_run_stats_t* stats);
  /* \since 1.5, optional. What compiling `model` did to the backend's
   * kernel cache, for the session's description (`kiln run`, `kiln bench`);
   * the host sets struct_size and zeroes the rest. */
  void (*model_compile_stats)(void* model, kiln_backend_compile_stats_t* out);
  /* \since 1.6, optional (check with KILN_PLUGIN_HAS_FIELD). What the
   * device the backend compiles for can do, for the passes of a session
   * that names the backend (kiln_host_api_t::target_info shows it to them;
   * kiln.layout chooses buffer or image per tensor from device_type and
   * max_image_dimension_2d under --storage auto). The host sets struct_size,
   * zeroes the rest and sets storage_mode itself afterwards; the backend
   * fills what it knows. A status when it has no device (the host then runs
   * the passes without a target). */
  kiln_plugin_status_t* (*target_info)(void* state, const kiln_host_api_t* host, kiln_target_info_t* out);
} kiln_backend_v1_t;

typedef struct kiln_plugin_t {
  uint32_t struct_size;
  uint32_t abi_version; /* the version this descriptor speaks */
  const char* name;     /* unique among loaded plugins */
  const char* version;  /* the plugin's own version, for `kiln passes` */
  const kiln_pass_t* const* passes; /* pass_count pointers (see the stride rule) */
  size_t pass_count;
  /* Optional named interfaces ("kiln.cost_model.v1", "kiln.backend.v1");
   * NULL when the plugin offers none or not that one. */
  const void* (*get_interface)(const char* interface_name);
} kiln_plugin_t;

typedef const kiln_plugin_t* (*kiln_plugin_query_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_KILN_PLUGIN_H_ */
