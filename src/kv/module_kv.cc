// Module kv.
