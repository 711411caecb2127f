package main

// vectorDims is the dimension of the vector section's embeddings.
const vectorDims = 128
