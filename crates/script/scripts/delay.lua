-- A random delay of 10 to 50 ms before each request.
function delay()
   return math.random(10, 50)
end
