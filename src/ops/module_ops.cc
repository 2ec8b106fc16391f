// Module ops.
