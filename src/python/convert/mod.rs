//! Conversions between Python values and the core's types, by concern: dtypes and devices
//! (`dtype.rs`), Python scalars and argument sequences (`scalar.rs`), NumPy arrays (`arrays.rs`) and
//! Python data for `tg.tensor` (`data.rs`). The names are re-exported here, so callers write
//! `super::convert::tensor_arg` whichever file holds it.

mod arrays;
mod data;
pub(crate) mod dlpack;
mod dtype;
mod exchange;
mod scalar;

pub(crate) use arrays::{tensor_from_numpy, to_numpy};
pub(crate) use data::tensor_from_data;
pub(crate) use dtype::{check_device, dtype_object, parse_dtype, register, PyDType, PyDevice};
pub(crate) use exchange::{array_interface, share_numpy, share_to_numpy, SharedMemory};
pub(crate) use scalar::{operand, scalar, shape_args, sizes, tensor_arg, Operand};
