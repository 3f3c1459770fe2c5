"""How a person sees it: the Gradio interface."""
