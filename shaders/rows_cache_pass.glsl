//! The first pass of the softmax and normalization row kernels when each
//! invocation's items fit in registers (planner/lower_normalization.cc:
//! cache_pass, lower_rows.h: cached_items): X is read once into kiln_xs,
//! and the statistics and write passes read the registers instead of
//! memory, so the kernel makes one pass over X's memory.
//!   @ITEMS@      items per invocation (a constant)
//!   @ITEM_LOOP@  the loop head over the invocation's items (index kiln_k)
//!   @C@          the item's coordinates
  vec4 kiln_xs[@ITEMS@];
@ITEM_LOOP@
    kiln_xs[kiln_k] = kiln_x4(@C@);
  }
