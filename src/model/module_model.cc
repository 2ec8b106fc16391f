// Module model.
