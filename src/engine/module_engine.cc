// Module engine.
