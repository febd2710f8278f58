"""Knowledge bases: clinical guidelines, FDA drug labels and user documents."""
