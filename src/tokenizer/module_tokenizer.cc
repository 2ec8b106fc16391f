// Module tokenizer.
