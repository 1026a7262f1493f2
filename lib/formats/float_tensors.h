// The tensors a model reads as numbers: norms, the embedding and head, unquantized linears
// and their biases (expected_tensor_names, tensor_inventory.h). Stored with an integer dtype
// (a writer's bug, a corrupted header) they would be converted into nonsense floats without
// a word; holding a NaN or an infinity, they poison every logit. A packed checkpoint's
// quantized tensors are not among them (PackedCheckpoint checks those).
#pragma once

#include "formats/checkpoint.h"
#include "formats/dtype.h"

namespace fsq {

// F32, F16, BF16 or F64.
bool is_float_dtype(DType t);

// Throws fsq::Error naming the file and the first such tensor stored with another dtype.
// Reads only the headers.
void check_float_dtypes(const Checkpoint& ckpt);

// Throws fsq::Error naming the file, the tensor and the first non-finite value of the first
// such tensor that holds one (what eval refuses when it loads the model). Reads every value.
void check_finite_floats(const Checkpoint& ckpt);

}  // namespace fsq
